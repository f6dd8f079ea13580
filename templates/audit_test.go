package templates

import (
	"context"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	d5list "github.com/deep500/d5list"
)

// A visitor's review history names a status it may not read rather than
// leaving it blank: a re-run of an unpublished discrepancy reads
// "verdict not public → queued", not " → queued".
func TestAuditLogNamesHiddenStatus(t *testing.T) {
	entries := []d5list.AuditEntry{
		{Actor: "olga", Action: d5list.ActionRerun, FromStatus: "", ToStatus: d5list.StatusQueued},
		{Actor: "olga", Action: d5list.ActionFlag, FromStatus: "", ToStatus: ""},
		{Actor: "olga", Action: d5list.ActionAccept, FromStatus: d5list.StatusNeedsReview, ToStatus: d5list.StatusVerified},
	}
	var b strings.Builder
	if err := auditLog(entries).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	doc.Find(`[data-testid="audit-entry"]`).Each(func(_ int, row *goquery.Selection) {
		got = append(got, strings.Join(strings.Fields(row.Find("td").Eq(3).Text()), " "))
	})
	want := []string{"verdict not public → queued", "verdict not public", "needs review → verified"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("status cells %q, want %q", got, want)
	}
}
