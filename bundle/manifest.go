package bundle

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	d5list "github.com/deep500/d5list"
)

// ParseManifest parses submission.json. Unknown keys are refused, so that a
// misspelt field is not silently ignored.
func ParseManifest(name string, data []byte) (d5list.Manifest, error) {
	var m d5list.Manifest
	vals, lines, order, err := jsonTopKeys(name, data)
	if err != nil {
		return m, retag(err, CodeManifest)
	}
	var rs reasons
	str := func(key string, dst *string, required bool) {
		raw, ok := vals[key]
		if !ok {
			if required {
				rs.add(CodeManifest, name, 0, "missing field %q", key)
			}
			return
		}
		if err := json.Unmarshal(raw, dst); err != nil {
			rs.add(CodeManifest, name, lines[key], "field %q must be a string", key)
			return
		}
		*dst = strings.TrimSpace(*dst)
		if required && *dst == "" {
			rs.add(CodeManifest, name, lines[key], "field %q is empty", key)
		}
	}
	known := map[string]bool{"format": true, "benchmark": true, "division": true, "availability": true,
		"submitter": true, "system_name": true, "framework": true, "code_url": true, "paper_url": true, "claims": true, "environment": true}
	for _, k := range order {
		if !known[k] {
			rs.add(CodeManifest, name, lines[k], "unknown field %q (fields: format, benchmark, division, availability, submitter, system_name, framework, code_url, paper_url, claims, environment)", k)
		}
	}
	str("format", &m.Format, true)
	str("benchmark", &m.Benchmark, true)
	str("division", &m.Division, true)
	str("availability", &m.Availability, true)
	str("submitter", &m.Submitter, true)
	str("system_name", &m.SystemName, true)
	str("framework", &m.Framework, true)
	str("code_url", &m.CodeURL, false)
	str("paper_url", &m.PaperURL, false)
	if m.Format != "" && m.Format != d5list.ManifestFormat {
		rs.add(CodeManifest, name, lines["format"], "format %q is not %q, the only format this portal reads", m.Format, d5list.ManifestFormat)
	}
	if m.Division != "" && m.Division != d5list.DivisionClosed && m.Division != d5list.DivisionOpen {
		rs.add(CodeManifest, name, lines["division"], "division %q: use %q or %q", m.Division, d5list.DivisionClosed, d5list.DivisionOpen)
	}
	switch m.Availability {
	case "", d5list.AvailabilityAvailable, d5list.AvailabilityPreview, d5list.AvailabilityRDI:
	default:
		rs.add(CodeManifest, name, lines["availability"], "availability %q: use %q, %q or %q", m.Availability,
			d5list.AvailabilityAvailable, d5list.AvailabilityPreview, d5list.AvailabilityRDI)
	}
	for _, f := range []struct {
		key string
		val *string
	}{{"code_url", &m.CodeURL}, {"paper_url", &m.PaperURL}} {
		if why := linkProblem(*f.val); why != "" {
			rs.add(CodeManifest, name, lines[f.key], "%s %s", f.key, why)
		}
	}
	if raw, ok := vals["claims"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &m.Claims); err != nil {
			rs.add(CodeManifest, name, lines["claims"], "claims must be an object of metric name to number")
		}
	}
	if raw, ok := vals["environment"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &m.Environment); err != nil {
			rs.add(CodeManifest, name, lines["environment"], "environment must be an object of label to string, as `d5list run` writes it")
		} else if bad := environmentProblem(m.Environment); bad != "" {
			rs.add(CodeManifest, name, lines["environment"], "environment: %s", bad)
			m.Environment = nil
		}
	}
	return m, rs.err("")
}

// MaxLinkBytes bounds the code and paper links of submission.json: the
// entry page and the exports show them, and a repository's or a paper's
// address is a few dozen bytes.
const MaxLinkBytes = 2048

// linkProblem says why link cannot be an entry's code or paper link, or
// "" when it can (or is empty): an http(s) URL with a host, of at most
// MaxLinkBytes, which a page may show as a link without running anything.
func linkProblem(link string) string {
	if link == "" {
		return ""
	}
	if len(link) > MaxLinkBytes {
		return fmt.Sprintf("is %d bytes long; at most %d are kept", len(link), MaxLinkBytes)
	}
	if u, err := url.Parse(link); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Sprintf("%.80q is not an http(s) URL", link)
	}
	return ""
}

// The environment's bounds: it is shown in verdicts, and `d5list run`
// writes a dozen short labels.
const (
	maxEnvironmentLabels = 64
	maxLabelBytes        = 200
)

// environmentProblem says what in a claimed environment is past its
// bounds, or "".
func environmentProblem(env map[string]string) string {
	if len(env) > maxEnvironmentLabels {
		return fmt.Sprintf("%d labels, more than %d", len(env), maxEnvironmentLabels)
	}
	for k, v := range env {
		if len(k) > maxLabelBytes || len(v) > maxLabelBytes {
			return fmt.Sprintf("label %.40q is longer than %d bytes", k, maxLabelBytes)
		}
	}
	return ""
}

// retag replaces the reason codes of a generic JSON error with code.
func retag(err error, code string) error {
	if e, ok := err.(*d5list.Error); ok {
		for i := range e.Reasons {
			e.Reasons[i].Code = code
		}
	}
	return err
}
