package templates

import (
	"context"

	d5list "github.com/deep500/d5list"
)

// Viewer is who looks at a page: the session's user and the CSRF token
// every form of the page carries. Pages read it from the context, so that
// no page signature has to pass it along.
type Viewer struct {
	Name string
	Role d5list.Role
	CSRF string
}

type viewerKey struct{}

// WithViewer returns ctx carrying v.
func WithViewer(ctx context.Context, v *Viewer) context.Context {
	return context.WithValue(ctx, viewerKey{}, v)
}

// ViewerFrom returns the page's viewer, nil for anonymous visitors.
func ViewerFrom(ctx context.Context) *Viewer {
	v, _ := ctx.Value(viewerKey{}).(*Viewer)
	return v
}

func viewerCSRF(ctx context.Context) string {
	if v := ViewerFrom(ctx); v != nil {
		return v.CSRF
	}
	return ""
}

func viewerIs(ctx context.Context, min d5list.Role) bool {
	v := ViewerFrom(ctx)
	return v != nil && v.Role.AtLeast(min)
}

// canChangeRole: organisers manage competitors and organisers; only an
// admin changes an admin (the server checks the same).
func canChangeRole(ctx context.Context, current d5list.Role) bool {
	if current == d5list.RoleAdmin {
		return viewerIs(ctx, d5list.RoleAdmin)
	}
	return viewerIs(ctx, d5list.RoleOrganiser)
}
