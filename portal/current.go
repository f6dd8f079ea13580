package portal

import (
	"context"
)

// CommitWatcher is asked of the store by type assertion: whether another
// process committed to the database since it was last asked
// (store.DB.CommittedElsewhere).
type CommitWatcher interface {
	CommittedElsewhere(ctx context.Context) (bool, error)
}

// Current makes what the service keeps (rendered boards and answers, the
// latest edition, the editions' development) current with the database,
// and is called before a request reads any of it. The service's own
// writes drop what they change as they commit; a commit by another
// process on the same data folder (d5list admin, a script, a second
// portal) tells it nothing, so every request first asks the store whether
// one came since the last request asked, and if so everything kept is
// dropped. The question and the drop are one step under a lock: no
// request that starts after such a commit takes an answer from before it
// while another request is between the store's answer and the drop.
func (s *Service) Current(ctx context.Context) error {
	cw, ok := s.store.(CommitWatcher)
	if !ok {
		return nil
	}
	s.elsewhere.Lock()
	defer s.elsewhere.Unlock()
	changed, err := cw.CommittedElsewhere(ctx)
	if err != nil || !changed {
		return err
	}
	if err := s.currentEditions(ctx); err != nil {
		return err
	}
	s.cache.InvalidateAll()
	s.changed()
	return nil
}

// currentEditions forgets the latest edition and the development kept in
// memory where the store's latest edition is another: one frozen by
// another process. It waits for a freeze of this process under way, which
// sets them itself once its edition is committed.
func (s *Service) currentEditions(ctx context.Context) error {
	es, ok := s.store.(EditionStore)
	if !ok {
		return nil
	}
	name, err := es.LatestEditionName(ctx)
	if err != nil {
		return err
	}
	if !s.keptEditionDiffers(name) {
		return nil
	}
	s.list.freezes.Lock()
	defer s.list.freezes.Unlock()
	if name, err = es.LatestEditionName(ctx); err != nil {
		return err
	}
	if s.keptEditionDiffers(name) {
		s.list.mu.Lock()
		s.list.loaded, s.list.latest, s.list.development = false, nil, nil
		s.list.mu.Unlock()
	}
	return nil
}

// keptEditionDiffers reports whether the service keeps anything of the
// editions that another latest edition than name would make stale.
func (s *Service) keptEditionDiffers(name string) bool {
	s.list.mu.Lock()
	defer s.list.mu.Unlock()
	switch {
	case !s.list.loaded:
		return s.list.development != nil
	case s.list.latest == nil:
		return name != ""
	}
	return s.list.latest.Name != name
}
