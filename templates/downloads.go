package templates

import d5list "github.com/deep500/d5list"

// keptRerunLogs are the runs of a measured result whose log the portal
// kept (d5list.RunMetrics.LogSHA256).
func keptRerunLogs(measured *d5list.Result) []d5list.RunMetrics {
	if measured == nil {
		return nil
	}
	var out []d5list.RunMetrics
	for _, r := range measured.Runs {
		if r.LogSHA256 != "" {
			out = append(out, r)
		}
	}
	return out
}
