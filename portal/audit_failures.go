package portal

import (
	"context"

	d5list "github.com/deep500/d5list"
)

// AuditFailureStore is what a failed audit's cost needs of the store,
// asked by type assertion. The store files each failure with its verdict,
// asks for a full audit at lease and holds uploads itself, in the
// transactions that do those; the service lists, clears and sets.
type AuditFailureStore interface {
	AuditFailures(ctx context.Context) ([]d5list.AuditFailure, error)
	ClearAuditFailures(ctx context.Context, by *d5list.User, ownerID int64, benchmarkID string) (int, error)
	Setting(ctx context.Context, name string) (string, error)
	SetSetting(ctx context.Context, by *d5list.User, name, value string) error
}

func (s *Service) auditFailureStore(user *d5list.User) (AuditFailureStore, error) {
	if user == nil || !user.Role.AtLeast(d5list.RoleOrganiser) {
		return nil, d5list.Errorf(d5list.EFORBIDDEN, "only organisers see and clear failed audits")
	}
	as, ok := s.store.(AuditFailureStore)
	if !ok {
		return nil, d5list.Errorf(d5list.EUNAVAILABLE, "this store keeps no failed audits")
	}
	return as, nil
}

// AuditFailures lists the failed audits for an organiser, newest first,
// and whether the organisers show them to everyone.
func (s *Service) AuditFailures(ctx context.Context, user *d5list.User) ([]d5list.AuditFailure, bool, error) {
	as, err := s.auditFailureStore(user)
	if err != nil {
		return nil, false, err
	}
	fs, err := as.AuditFailures(ctx)
	if err != nil {
		return nil, false, err
	}
	v, err := as.Setting(ctx, d5list.SettingShowFailedAudits)
	return fs, v == "on", err
}

// ClearAuditFailures clears, for an organiser, the account ownerID's
// uncleared failed audits of benchmark: its uploads of it are no longer
// held, nor its next job audited in full.
func (s *Service) ClearAuditFailures(ctx context.Context, user *d5list.User, ownerID int64, benchmarkID string) (int, error) {
	as, err := s.auditFailureStore(user)
	if err != nil {
		return 0, err
	}
	n, err := as.ClearAuditFailures(ctx, user, ownerID, benchmarkID)
	if err != nil {
		return 0, err
	}
	s.changed()
	s.log.InfoContext(ctx, "failed audits cleared", "by", user.Name, "user_id", ownerID, "benchmark", benchmarkID, "cleared", n)
	return n, nil
}

// ShowFailedAudits sets, for an organiser, whether the entries whose audit
// failed are shown to everyone (off by default: their competitor's and the
// organisers' alone).
func (s *Service) ShowFailedAudits(ctx context.Context, user *d5list.User, show bool) error {
	as, err := s.auditFailureStore(user)
	if err != nil {
		return err
	}
	v := "off"
	if show {
		v = "on"
	}
	if err := as.SetSetting(ctx, user, d5list.SettingShowFailedAudits, v); err != nil {
		return err
	}
	// Which entries anyone may open changed; the boards list none of them.
	s.changed()
	s.cache.InvalidateAll()
	s.log.InfoContext(ctx, "failed audits shown to everyone", "by", user.Name, "show", show)
	return nil
}
