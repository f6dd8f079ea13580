package leaderboard

import (
	"sort"
	"strings"

	d5list "github.com/deep500/d5list"
)

// Share is one group's part of a board, as in Top500's statistics pages.
type Share struct {
	Group       string  `json:"group"`
	Entries     int     `json:"entries"`
	EntryShare  float64 `json:"entry_share"`       // fraction of the entries
	Performance float64 `json:"performance_share"` // fraction of the summed performance
}

// Performance turns a ranked value into "more is better" so that values
// can be summed across entries: the value itself when higher is better,
// its reciprocal (a rate, runs per unit of time) when lower is better.
func Performance(bench *d5list.Benchmark, value float64) float64 {
	if direction(bench.Ranking.Metric, bench.Ranking.Direction) == d5list.LowerIsBetter {
		if value <= 0 {
			return 0
		}
		return 1 / value
	}
	return value
}

// Shares groups entries by group(entry) and gives each group's share of
// entries and of performance, the largest group by entries first (ties by
// name).
func Shares(bench *d5list.Benchmark, entries []d5list.Entry, group func(d5list.Entry) string) []Share {
	byGroup := map[string]*Share{}
	var total float64
	for _, e := range entries {
		g := group(e)
		s := byGroup[g]
		if s == nil {
			s = &Share{Group: g}
			byGroup[g] = s
		}
		p := Performance(bench, e.Value)
		s.Entries++
		s.Performance += p
		total += p
	}
	return finishShares(byGroup, len(entries), total)
}

// finishShares makes each group's sums shares of entries and total, the
// largest group by entries first.
func finishShares(byGroup map[string]*Share, entries int, total float64) []Share {
	out := make([]Share, 0, len(byGroup))
	for _, s := range byGroup {
		s.EntryShare = float64(s.Entries) / float64(entries)
		if total > 0 {
			s.Performance /= total
		}
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Entries != out[j].Entries {
			return out[i].Entries > out[j].Entries
		}
		return out[i].Group < out[j].Group
	})
	return out
}

// knownVendors maps a word of an accelerator's model name to its vendor.
var knownVendors = map[string]string{
	"nvidia": "NVIDIA", "tesla": "NVIDIA", "geforce": "NVIDIA", "a100": "NVIDIA", "h100": "NVIDIA", "h200": "NVIDIA", "v100": "NVIDIA", "l4": "NVIDIA", "l40s": "NVIDIA", "t4": "NVIDIA", "gb200": "NVIDIA", "b200": "NVIDIA",
	"amd": "AMD", "instinct": "AMD", "mi250": "AMD", "mi250x": "AMD", "mi300x": "AMD", "radeon": "AMD",
	"intel": "Intel", "gaudi": "Intel", "gaudi2": "Intel", "gaudi3": "Intel", "habana": "Intel",
	"google": "Google", "tpu": "Google",
	"graphcore": "Graphcore", "ipu": "Graphcore",
	"cerebras": "Cerebras", "sambanova": "SambaNova", "apple": "Apple", "huawei": "Huawei", "ascend": "Huawei",
}

// Vendor names the maker of an entry's accelerator, from the model name
// that system.json declares; entries without one are "CPU only".
func Vendor(e d5list.Entry) string {
	model := strings.TrimSpace(e.Accelerator)
	if model == "" {
		return "CPU only"
	}
	for _, w := range strings.FieldsFunc(strings.ToLower(model), func(r rune) bool { return r == ' ' || r == '-' || r == '_' }) {
		if v, ok := knownVendors[w]; ok {
			return v
		}
	}
	return strings.Fields(model)[0]
}

// Framework groups entries by framework, as declared.
func Framework(e d5list.Entry) string {
	if f := strings.TrimSpace(e.Framework); f != "" {
		return f
	}
	return "unknown"
}
