package portal

import (
	"context"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

// PlaceOf is where sub stands on its benchmark's live default board
// (leaderboard.EntryPlace): ranked there, superseded there by its
// system's best entry, or not listed.
func (s *Service) PlaceOf(ctx context.Context, sub *d5list.Submission) (leaderboard.EntryPlace, error) {
	ix, indexed := s.store.(BoardIndex)
	sys, systems := s.store.(SystemIndex)
	if !indexed || !systems {
		return s.placeByRanking(ctx, sub)
	}
	e, err := ix.RankOf(ctx, sub.BenchmarkID, sub.ID, true)
	if err != nil {
		return leaderboard.EntryPlace{}, err
	}
	if e != nil {
		_, n, err := ix.BoardPage(ctx, sub.BenchmarkID, leaderboard.Options{}, 0, 1)
		return leaderboard.EntryPlace{Entry: e, Of: n}, err
	}
	listed, err := ix.RankOf(ctx, sub.BenchmarkID, sub.ID, false)
	if err != nil || listed == nil {
		return leaderboard.EntryPlace{}, err
	}
	best, _, err := sys.SystemOnBoard(ctx, sub.BenchmarkID, leaderboard.SystemKey(listed.Submitter, listed.SystemName))
	if err != nil || best == nil {
		return leaderboard.EntryPlace{}, err
	}
	return leaderboard.EntryPlace{SupersededBy: best.SubmissionID}, nil
}

// placeByRanking is PlaceOf for a store without the boards' index: it
// ranks the default board and the board of every entry.
func (s *Service) placeByRanking(ctx context.Context, sub *d5list.Submission) (leaderboard.EntryPlace, error) {
	board, err := s.LeaderboardWith(ctx, sub.BenchmarkID, leaderboard.Options{})
	if err != nil {
		return leaderboard.EntryPlace{}, err
	}
	for i := range board.Entries {
		if board.Entries[i].SubmissionID == sub.ID {
			return leaderboard.EntryPlace{Entry: &board.Entries[i], Of: len(board.Entries)}, nil
		}
	}
	all, err := s.LeaderboardWith(ctx, sub.BenchmarkID, leaderboard.Options{AllPerSystem: true})
	if err != nil {
		return leaderboard.EntryPlace{}, err
	}
	for _, e := range all.Entries {
		if e.SubmissionID != sub.ID {
			continue
		}
		key := leaderboard.SystemKey(e.Submitter, e.SystemName)
		for _, best := range board.Entries {
			if leaderboard.SystemKey(best.Submitter, best.SystemName) == key {
				return leaderboard.EntryPlace{SupersededBy: best.SubmissionID}, nil
			}
		}
	}
	return leaderboard.EntryPlace{}, nil
}
