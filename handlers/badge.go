package handlers

import (
	"fmt"
	"html"
	"net/http"
	"unicode/utf8"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

// Badge is GET /submissions/{id}/badge.svg: a shields-style badge with the
// submission's rank on its benchmark's default board (or its state) for
// competitors' READMEs. An entry its system bettered says so rather than
// quote a rank the board does not give it.
func (h *Handler) Badge(w http.ResponseWriter, r *http.Request) {
	sub, _, err := h.visibleSubmission(r)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	label := "deep500 " + sub.BenchmarkID
	value, color := badgeValue(sub), "#9f9f9f"
	if sub.Status == d5list.StatusVerified && sub.Flag == "" {
		color = "#4c1"
		if placer, ok := h.svc.(entryPlacer); ok {
			place, err := placer.PlaceOf(r.Context(), sub)
			if err != nil {
				h.Error(w, r, err)
				return
			}
			bench, err := h.svc.Benchmark(r.Context(), sub.BenchmarkID)
			if err != nil {
				h.Error(w, r, err)
				return
			}
			switch {
			case place.Entry != nil:
				value = leaderboard.RankLabel(place.Entry.Rank) + " · " + leaderboard.FormatValue(place.Entry.Value, bench.Ranking.Unit)
			case place.SupersededBy != 0:
				value, color = "superseded by "+leaderboard.SubmissionLabel(place.SupersededBy), "#9f9f9f"
			}
		}
	} else if sub.Status == d5list.StatusRejected || sub.Status == d5list.StatusDiscrepancy {
		color = "#e05d44"
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	// Badges change with verdicts; caches must ask again.
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write([]byte(badgeSVG(label, value, color)))
}

func badgeValue(s *d5list.Submission) string {
	if s.Flag != "" {
		return "flagged"
	}
	return string(s.Status)
}

// badgeSVG draws two boxes whose widths follow the text (about 6.5 px a
// character at 11 px Verdana, as shields.io estimates).
func badgeSVG(label, value, color string) string {
	lw := 10 + utf8.RuneCountInString(label)*13/2
	vw := 10 + utf8.RuneCountInString(value)*13/2
	l, v := html.EscapeString(label), html.EscapeString(value)
	return fmt.Sprintf(`<svg xmlns="http://www.w3.org/2000/svg" width="%[1]d" height="20" role="img" aria-label="%[3]s: %[4]s">`+
		`<title>%[3]s: %[4]s</title>`+
		`<rect width="%[2]d" height="20" fill="#555"/><rect x="%[2]d" width="%[5]d" height="20" fill="%[6]s"/>`+
		`<g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" font-size="11">`+
		`<text x="%[7]d" y="14">%[3]s</text><text x="%[8]d" y="14">%[4]s</text></g></svg>`,
		lw+vw, lw, l, v, vw, color, lw/2, lw+vw/2)
}
