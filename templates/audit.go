package templates

import d5list "github.com/deep500/d5list"

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
