package leaderboard

import (
	"net/url"
	"strings"

	d5list "github.com/deep500/d5list"
)

// Query parameters of a board's permalink; the page and the JSON and CSV
// exports read the same ones.
const (
	ParamDivision     = "division"
	ParamAvailability = "availability"
	ParamAccelerator  = "accelerator"
	ParamFramework    = "framework"
	ParamRows         = "rows"   // "system" (default) or "all"
	ParamStatus       = "status" // "verified" (default) or "all"
	ParamSearch       = "q"      // submitter, system, framework or accelerator contains it
	ParamSort         = "sort"   // "" (by rank), "date", "submitter", "system", "score" or "score-reverse"
)

// MaxSearchBytes bounds a search's text, on a board and across the list.
const MaxSearchBytes = 100

// MaxSearchNames bounds the names one search across the list looks up on
// the boards: past it the search says that it kept the first ones.
const MaxSearchNames = 50

// ParseQuery reads Options from a permalink's query. Unknown values of the
// two toggles are an error naming the parameter, so a mistyped link does
// not silently show another board.
func ParseQuery(q url.Values) (Options, error) {
	opt := Options{
		Division:     strings.TrimSpace(q.Get(ParamDivision)),
		Availability: strings.TrimSpace(q.Get(ParamAvailability)),
		Accelerator:  strings.TrimSpace(q.Get(ParamAccelerator)),
		Framework:    strings.TrimSpace(q.Get(ParamFramework)),
		Search:       strings.TrimSpace(q.Get(ParamSearch)),
		Sort:         strings.TrimSpace(q.Get(ParamSort)),
	}
	switch strings.ToLower(opt.Sort) {
	case "", "rank", SortDate, SortSubmitter, SortSystem, SortScore, SortScoreReverse:
		if strings.ToLower(opt.Sort) == "rank" {
			opt.Sort = ""
		}
	default:
		return Options{}, d5list.Errorf(d5list.EINVALID, "query parameter %s=%q: use \"rank\", \"date\", \"submitter\", \"system\", \"score\" or \"score-reverse\"", ParamSort, opt.Sort)
	}
	if len(opt.Search) > MaxSearchBytes {
		return Options{}, d5list.Errorf(d5list.EINVALID, "query parameter %s: longer than %d characters", ParamSearch, MaxSearchBytes)
	}
	switch v := q.Get(ParamRows); v {
	case "", "system":
	case "all":
		opt.AllPerSystem = true
	default:
		return Options{}, d5list.Errorf(d5list.EINVALID, "query parameter %s=%q: use \"system\" or \"all\"", ParamRows, v)
	}
	switch v := q.Get(ParamStatus); v {
	case "", "verified":
	case "all":
		opt.IncludeUnverified = true
	default:
		return Options{}, d5list.Errorf(d5list.EINVALID, "query parameter %s=%q: use \"verified\" or \"all\"", ParamStatus, v)
	}
	switch strings.ToLower(opt.Division) {
	case "", d5list.DivisionClosed, d5list.DivisionOpen:
	default:
		return Options{}, d5list.Errorf(d5list.EINVALID, "query parameter %s=%q: use \"closed\" or \"open\"", ParamDivision, opt.Division)
	}
	switch strings.ToLower(opt.Availability) {
	case "", d5list.AvailabilityAvailable, d5list.AvailabilityPreview, d5list.AvailabilityRDI:
	default:
		return Options{}, d5list.Errorf(d5list.EINVALID, "query parameter %s=%q: use \"available\", \"preview\" or \"rdi\"", ParamAvailability, opt.Availability)
	}
	return opt, nil
}

// Query is the permalink query of opt; the default board has none. Keys
// come out sorted, so one board has one link.
func (o Options) Query() url.Values {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set(ParamDivision, o.Division)
	set(ParamAvailability, o.Availability)
	set(ParamAccelerator, o.Accelerator)
	set(ParamFramework, o.Framework)
	set(ParamSearch, o.Search)
	set(ParamSort, o.Sort)
	if o.AllPerSystem {
		q.Set(ParamRows, "all")
	}
	if o.IncludeUnverified {
		q.Set(ParamStatus, "all")
	}
	return q
}

// Link is path with opt's query, for links between views of one board.
func (o Options) Link(path string) string {
	if q := o.Query().Encode(); q != "" {
		return path + "?" + q
	}
	return path
}
