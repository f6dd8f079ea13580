package handlers

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
	"github.com/deep500/d5list/templates"
)

type atomFeed struct {
	XMLName xml.Name    `xml:"http://www.w3.org/2005/Atom feed"`
	Title   string      `xml:"title"`
	ID      string      `xml:"id"`
	Updated string      `xml:"updated"`
	Link    []atomLink  `xml:"link"`
	Author  atomAuthor  `xml:"author"`
	Entries []atomEntry `xml:"entry"`
}

type atomLink struct {
	Href string `xml:"href,attr"`
	Rel  string `xml:"rel,attr,omitempty"`
	Type string `xml:"type,attr,omitempty"`
}

type atomAuthor struct {
	Name string `xml:"name"`
}

type atomEntry struct {
	Title   string     `xml:"title"`
	ID      string     `xml:"id"`
	Updated string     `xml:"updated"`
	Link    []atomLink `xml:"link"`
	Summary string     `xml:"summary"`
}

// feedText is a verified entry's title and summary in the feed: the value
// its board ranks, printed as the board prints it, with whose it is (the
// portal's measurement, or the claim no runner could re-measure). The
// entry is named by its number as every page names it, never "#N", which
// is a rank.
func feedText(bench *d5list.Benchmark, s *d5list.Submission) (title, summary string) {
	title = fmt.Sprintf("%s: %s · %s on %s", templates.SubmissionTitle(s.ID), s.Submitter, s.SystemName, s.BenchmarkID)
	summary = fmt.Sprintf("%s ran %s on %s (%s, %s division).", s.Submitter, bench.Name, s.SystemName, s.Framework, s.Division)
	e, ok := leaderboard.EntryOf(bench, s)
	if !ok {
		return title, summary
	}
	value := leaderboard.FormatValue(e.Value, bench.Ranking.Unit)
	title += ": " + value
	summary += " " + templates.RankedLabel(bench) + ": " + value
	switch {
	case e.Basis == d5list.BasisClaimed:
		summary += ", as claimed: no runner of its hardware could re-measure it."
	case e.Claimed != 0 && leaderboard.FormatValue(e.Claimed, bench.Ranking.Unit) != value:
		summary += ", as the portal measured it (claimed " + leaderboard.FormatValue(e.Claimed, bench.Ranking.Unit) + ")."
	default:
		summary += ", as the portal measured it."
	}
	if e.Accepted {
		summary += " An organiser accepted it after reviewing its re-run's findings."
	}
	return title, summary
}

// Feed is GET /feed.atom: the 50 most recently verified entries.
func (h *Handler) Feed(w http.ResponseWriter, r *http.Request) {
	ls, err := h.list()
	if err != nil {
		h.Error(w, r, err)
		return
	}
	subs, err := ls.VerifiedFeed(r.Context(), 50)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	base := baseURL(r)
	feed := atomFeed{
		Title:   "Deep500 list: newly verified results",
		ID:      base + "/feed.atom",
		Updated: time.Unix(0, 0).UTC().Format(time.RFC3339),
		Link:    []atomLink{{Href: base + "/feed.atom", Rel: "self", Type: "application/atom+xml"}, {Href: base + "/list"}},
		Author:  atomAuthor{Name: "Deep500 list"},
	}
	if len(subs) > 0 {
		feed.Updated = subs[0].UpdatedAt.UTC().Format(time.RFC3339Nano)
	}
	benches := map[string]*d5list.Benchmark{}
	for i := range subs {
		s := &subs[i]
		bench, ok := benches[s.BenchmarkID]
		if !ok {
			if bench, err = h.svc.Benchmark(r.Context(), s.BenchmarkID); err != nil {
				h.Error(w, r, err)
				return
			}
			benches[s.BenchmarkID] = bench
		}
		link := base + leaderboard.SubmissionPath(s.ID)
		title, summary := feedText(bench, s)
		feed.Entries = append(feed.Entries, atomEntry{
			// The id is the permalink, which never changes.
			Title: title, ID: link, Updated: s.UpdatedAt.UTC().Format(time.RFC3339Nano),
			Link: []atomLink{{Href: link}}, Summary: summary,
		})
	}
	w.Header().Set("Content-Type", "application/atom+xml; charset=utf-8")
	_, _ = w.Write([]byte(xml.Header))
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(feed); err != nil {
		h.log.ErrorContext(r.Context(), "writing the feed", "err", err)
	}
}
