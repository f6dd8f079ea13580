package handlers

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"time"

	"github.com/deep500/d5list/leaderboard"
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
	for _, s := range subs {
		link := base + leaderboard.SubmissionPath(s.ID)
		summary := fmt.Sprintf("%s ran %s on %s (%s, %s division).", s.Submitter, s.BenchmarkID, s.SystemName, s.Framework, s.Division)
		if s.Claimed != nil && s.Claimed.Score.Valid {
			summary += fmt.Sprintf(" Score %g.", s.Claimed.Score.Value)
		}
		feed.Entries = append(feed.Entries, atomEntry{
			// The id is the permalink, which never changes.
			Title: fmt.Sprintf("#%d %s · %s on %s", s.ID, s.Submitter, s.SystemName, s.BenchmarkID),
			ID:    link, Updated: s.UpdatedAt.UTC().Format(time.RFC3339Nano),
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
