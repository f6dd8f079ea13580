package templates

import d5list "github.com/deep500/d5list"

// auditStatusWords is a status in the review history. An empty one is a
// verdict the viewer may not read (handlers.historyFor blanks it): it is
// named as such, not left as a blank before the arrow.
func auditStatusWords(s d5list.Status) string {
	if s == "" {
		return "verdict not public"
	}
	return statusWords(s)
}

func auditActionWords(a d5list.ReviewAction) string {
	switch a {
	case d5list.ActionAccept:
		return "accepted"
	case d5list.ActionReject:
		return "rejected"
	case d5list.ActionMoveOpen:
		return "moved to the open division"
	case d5list.ActionFlag:
		return "flagged"
	case d5list.ActionRerun:
		return "re-run requested"
	case d5list.ActionRescore:
		return "rescored after a rules change"
	}
	return string(a)
}
