package templates

import (
	"slices"
	"strings"

	d5list "github.com/deep500/d5list"
)

// auditGroup is one account's failed audits, under the organisation it
// uploaded for, newest first; its holds are the benchmarks with failures
// no organiser has cleared.
type auditGroup struct {
	OwnerID      int64
	Owner        string
	Organisation string
	Failures     []d5list.AuditFailure
	Holds        []auditHold
}

// auditHold is what an account's uncleared failures of a benchmark cost
// it: a full audit of its next job, or, from
// d5list.HoldAfterAuditFailures of them, its uploads held.
type auditHold struct {
	Benchmark string
	Uncleared int
}

// heldOf is what a group's account may be cleared of: nothing where the
// entries have no account.
func heldOf(g auditGroup) []auditHold {
	if g.OwnerID == 0 {
		return nil
	}
	return g.Holds
}

func (h auditHold) Held() bool { return h.Uncleared >= d5list.HoldAfterAuditFailures }

// auditGroups groups failures (newest first) by account and organisation,
// the group with the newest failure first.
func auditGroups(failures []d5list.AuditFailure) []auditGroup {
	var groups []auditGroup
	at := map[string]int{}
	for _, f := range failures {
		key := i64toa(f.OwnerID) + "\x00" + strings.ToLower(f.Organisation)
		i, ok := at[key]
		if !ok {
			i = len(groups)
			at[key] = i
			groups = append(groups, auditGroup{OwnerID: f.OwnerID, Owner: f.Owner, Organisation: f.Organisation})
		}
		g := &groups[i]
		g.Failures = append(g.Failures, f)
		if f.ClearedAt != nil {
			continue
		}
		k := slices.IndexFunc(g.Holds, func(h auditHold) bool { return h.Benchmark == f.BenchmarkID })
		if k < 0 {
			g.Holds = append(g.Holds, auditHold{Benchmark: f.BenchmarkID})
			k = len(g.Holds) - 1
		}
		g.Holds[k].Uncleared++
	}
	return groups
}

// auditCodes are a failure's reason codes, for the console's list.
func auditCodes(f d5list.AuditFailure) string {
	codes := make([]string, 0, len(f.Reasons))
	for _, r := range f.Reasons {
		if !slices.Contains(codes, r.Code) {
			codes = append(codes, r.Code)
		}
	}
	return strings.Join(codes, ", ")
}

// auditFirst is a failure's first reason's message.
func auditFirst(f d5list.AuditFailure) string {
	if len(f.Reasons) == 0 {
		return ""
	}
	return f.Reasons[0].Message
}
