package handlers

import (
	"context"
	"net/http"
)

// currentKeeper is a service that keeps answers computed from the
// database and can make them current with it (portal.Service.Current),
// writes of other processes included.
type currentKeeper interface {
	Current(ctx context.Context) error
}

// Current has the service make what it keeps current with the database
// before the request is served: a commit of another process on the same
// data folder is in every answer to a request that starts after it, as
// the portal's own are.
func (h *Handler) Current(next http.Handler) http.Handler {
	keeper, ok := h.svc.(currentKeeper)
	if !ok {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := keeper.Current(r.Context()); err != nil {
			h.Error(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}
