package handlers

import (
	"context"
	"net/http"
	"strings"

	d5list "github.com/deep500/d5list"
)

type userKey struct{}

// RequireRole authenticates the request's bearer token, or else its
// browser session, and lets it through only for users holding at least
// min. The token never leaves this function: it is not logged and not
// stored in the context.
func (h *Handler) RequireRole(min d5list.Role) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			token, ok := bearerToken(r)
			if !ok {
				// A browser's session (checked for CSRF by Session) stands
				// in for the token.
				user := sessionUser(r)
				if user == nil {
					if toLogin(w, r) {
						return
					}
					h.Error(w, r, d5list.Errorf(d5list.EUNAUTHORIZED, "an API token is required (Authorization: Bearer <token>), or log in"))
					return
				}
				h.allow(w, r, next, user, min)
				return
			}
			user, err := h.svc.Authenticate(r.Context(), token)
			if d5list.ErrorCode(err) == d5list.ENOTFOUND {
				// An unknown token is bad credentials, never a missing page.
				err = d5list.Errorf(d5list.EUNAUTHORIZED, "the API token is not valid")
			}
			if err != nil {
				h.Error(w, r, err)
				return
			}
			if user == nil {
				h.Error(w, r, d5list.Errorf(d5list.EUNAUTHORIZED, "the API token is not valid"))
				return
			}
			h.allow(w, r, next, user, min)
		})
	}
}

// allow passes the request on when user holds at least min.
func (h *Handler) allow(w http.ResponseWriter, r *http.Request, next http.Handler, user *d5list.User, min d5list.Role) {
	if !user.Role.AtLeast(min) {
		h.Error(w, r, d5list.Errorf(d5list.EFORBIDDEN, "role %s may not do this; %s or higher is required", user.Role, min))
		return
	}
	next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, user)))
}

// userFrom returns the user RequireRole authenticated.
func userFrom(ctx context.Context) *d5list.User {
	u, _ := ctx.Value(userKey{}).(*d5list.User)
	return u
}

func bearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}
