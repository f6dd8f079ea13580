package templates

import (
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
)

// The console groups failed audits (newest first) by account and
// organisation, the group with the newest first, and counts per benchmark
// the failures no organiser cleared; an account's entries under another
// organisation are another group, and entries with no account hold
// nothing.
func TestAuditGroups(t *testing.T) {
	now := time.Date(2026, 11, 28, 5, 0, 0, 0, time.UTC)
	cleared := now.Add(-time.Minute)
	f := func(id, owner int64, org, bench string, ago time.Duration, clearedAt *time.Time) d5list.AuditFailure {
		return d5list.AuditFailure{SubmissionID: id, OwnerID: owner, Owner: "u" + i64toa(owner), Organisation: org,
			BenchmarkID: bench, CreatedAt: now.Add(-ago), ClearedAt: clearedAt}
	}
	groups := auditGroups([]d5list.AuditFailure{
		f(9, 2, "Lab B", "l0", time.Minute, nil),
		f(8, 1, "Lab A", "l2", 2*time.Minute, nil),
		f(7, 1, "lab a", "l2", 3*time.Minute, nil),
		f(6, 1, "Lab A", "l0", 4*time.Minute, nil),
		f(5, 1, "Lab A", "l0", 5*time.Minute, &cleared),
		f(4, 1, "Lab C", "l0", 6*time.Minute, nil),
		f(3, 0, "Lab A", "l0", 7*time.Minute, nil),
	})
	if len(groups) != 4 || groups[0].Owner != "u2" || groups[1].Owner != "u1" || groups[1].Organisation != "Lab A" ||
		groups[2].Organisation != "Lab C" || groups[3].OwnerID != 0 {
		t.Fatalf("groups %+v", groups)
	}
	a := groups[1]
	if len(a.Failures) != 4 || a.Failures[0].SubmissionID != 8 || a.Failures[3].SubmissionID != 5 {
		t.Fatalf("Lab A's failures %+v, want 8, 7, 6, 5", a.Failures)
	}
	if len(a.Holds) != 2 || a.Holds[0] != (auditHold{"l2", 2}) || !a.Holds[0].Held() || a.Holds[1] != (auditHold{"l0", 1}) || a.Holds[1].Held() {
		t.Fatalf("Lab A's holds %+v, want l2 held (2) and l0 not (1, one cleared)", a.Holds)
	}
	if len(heldOf(groups[3])) != 0 {
		t.Fatalf("entries with no account offer holds to clear: %+v", groups[3].Holds)
	}
}
