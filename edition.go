package d5list

import "time"

// Edition is a frozen snapshot of every board, like a Top500 list of one
// November: once frozen it never changes, whatever happens to the
// submissions it lists.
type Edition struct {
	Name     string        `json:"name"`
	FrozenAt time.Time     `json:"frozen_at"`
	FrozenBy string        `json:"frozen_by"`
	Boards   []Leaderboard `json:"boards"`
}

// EditionSummary names an edition without its boards.
type EditionSummary struct {
	Name     string    `json:"name"`
	FrozenAt time.Time `json:"frozen_at"`
	FrozenBy string    `json:"frozen_by"`
	Entries  int       `json:"entries"`
}
