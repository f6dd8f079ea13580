package handlers

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/templates"
)

// Codes the HTTP layer adds to the domain's, for conditions only HTTP has.
const (
	eUnsupportedMedia = "unsupported_media_type" // a body the endpoint does not read
	eMethodNotAllowed = "method_not_allowed"
)

// statusOf maps error codes to HTTP statuses; it is the only place that does.
var statusOf = map[string]int{
	d5list.EINVALID:      http.StatusBadRequest,
	d5list.EUNAUTHORIZED: http.StatusUnauthorized,
	d5list.EFORBIDDEN:    http.StatusForbidden,
	d5list.ENOTFOUND:     http.StatusNotFound,
	d5list.ECONFLICT:     http.StatusConflict,
	d5list.ETOOLARGE:     http.StatusRequestEntityTooLarge,
	d5list.ELIMIT:        http.StatusTooManyRequests,
	d5list.EUNAVAILABLE:  http.StatusServiceUnavailable,
	d5list.EINTERNAL:     http.StatusInternalServerError,
	eUnsupportedMedia:    http.StatusUnsupportedMediaType,
	eMethodNotAllowed:    http.StatusMethodNotAllowed,
}

// StatusOf returns the HTTP status of an error code; unknown codes are 500.
func StatusOf(code string) int {
	if s, ok := statusOf[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

type errorBody struct {
	Error errorJSON `json:"error"`
}

type errorJSON struct {
	Code    string          `json:"code"`
	Message string          `json:"message"`
	Reasons []d5list.Reason `json:"reasons"`
}

// Error answers err: JSON under /api/, an HTML page elsewhere. Internal
// errors are logged with the request id and answered without details.
func (h *Handler) Error(w http.ResponseWriter, r *http.Request, err error) {
	err = fromTransport(err)
	code := d5list.ErrorCode(err)
	status := StatusOf(code)
	msg := d5list.ErrorMessage(err)
	reasons := d5list.ErrorReasons(err)
	if status == http.StatusInternalServerError {
		h.log.ErrorContext(r.Context(), "internal error", "method", r.Method, "path", r.URL.Path,
			"request_id", w.Header().Get("X-Request-Id"), "err", err)
		code, msg, reasons = d5list.EINTERNAL, "internal error", nil
	}
	if reasons == nil {
		reasons = []d5list.Reason{}
	}
	if code == d5list.EUNAUTHORIZED {
		w.Header().Set("WWW-Authenticate", `Bearer realm="d5list"`)
	}
	if wantsJSON(r) {
		h.writeJSON(w, r, status, errorBody{errorJSON{Code: code, Message: msg, Reasons: reasons}})
		return
	}
	h.render(w, r, status, templates.ErrorPage(status, code, msg, reasons))
}

// fromTransport gives errors of the HTTP machinery their domain code, so
// that an over-long body is a 413 wherever it is noticed.
func fromTransport(err error) error {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return d5list.Errorf(d5list.ETOOLARGE, "the request body is larger than %d bytes", tooLarge.Limit)
	}
	return err
}

func wantsJSON(r *http.Request) bool {
	return strings.HasPrefix(r.URL.Path, "/api/")
}

// NotFound answers routes that do not exist.
func (h *Handler) NotFound(w http.ResponseWriter, r *http.Request) {
	h.Error(w, r, d5list.Errorf(d5list.ENOTFOUND, "%s does not exist", r.URL.Path))
}

// MethodNotAllowed answers known routes called with the wrong method.
func (h *Handler) MethodNotAllowed(w http.ResponseWriter, r *http.Request) {
	h.Error(w, r, d5list.Errorf(eMethodNotAllowed, "%s is not allowed on %s", r.Method, r.URL.Path))
}

// writeJSON answers v as JSON. It encodes before it writes the status, so
// that a value JSON cannot hold (a NaN or an infinity that reached a
// stored result) is a logged 500 with an error body, never a 200 with an
// empty or cut body.
func (h *Handler) writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		h.log.ErrorContext(r.Context(), "answer not encodable as JSON", "method", r.Method, "path", r.URL.Path,
			"request_id", w.Header().Get("X-Request-Id"), "err", err)
		status = http.StatusInternalServerError
		body, _ = json.Marshal(errorBody{errorJSON{Code: d5list.EINTERNAL, Message: "internal error", Reasons: []d5list.Reason{}}})
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}
