package handlers

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"

	d5list "github.com/deep500/d5list"
)

// rawBundleTypes are the Content-Types of a bundle sent as the whole body;
// the service tells tar.gz from zip by content.
var rawBundleTypes = map[string]bool{
	"application/gzip":         true,
	"application/x-gzip":       true,
	"application/octet-stream": true,
	"application/zip":          true,
}

type createdJSON struct {
	ID     int64         `json:"id"`
	Status d5list.Status `json:"status"`
	URL    string        `json:"url"`
	// Repeated says that the upload held the files of the entry ID, which
	// the user uploaded before; Message says so in words.
	Repeated bool   `json:"repeated,omitempty"`
	Message  string `json:"message,omitempty"`
}

// CreateSubmission is POST /api/v1/submissions: a bundle as the multipart
// field "bundle" or as the raw body, or the files of a submission folder as
// multipart fields "files". The body is streamed to the service (a folder
// through a scratch folder on disk), never buffered whole. An upload of
// files the user uploaded before is answered 200 with that entry, as a
// repeated PUT would be, instead of 201 with a new one.
func (h *Handler) CreateSubmission(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength > h.opts.MaxUploadBytes {
		h.Error(w, r, d5list.Errorf(d5list.ETOOLARGE, "the request body is %d bytes; the limit is %d", r.ContentLength, h.opts.MaxUploadBytes))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, h.opts.MaxUploadBytes)
	body, cleanup, err := bundleBody(r, h.opts.ScratchDir)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	defer cleanup()
	sub, repeated, err := h.svc.Submit(r.Context(), userFrom(r.Context()), body)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	id := strconv.FormatInt(sub.ID, 10)
	w.Header().Set("Location", "/api/v1/submissions/"+id)
	if repeated {
		h.writeJSON(w, r, http.StatusOK, createdJSON{ID: sub.ID, Status: sub.Status, URL: "/submissions/" + id,
			Repeated: true, Message: RepeatedUploadMessage(sub)})
		return
	}
	h.writeJSON(w, r, http.StatusCreated, createdJSON{ID: sub.ID, Status: sub.Status, URL: "/submissions/" + id})
}

// RepeatedUploadMessage tells the uploader of files they uploaded before
// where those went, and that nothing new was made of them.
func RepeatedUploadMessage(sub *d5list.Submission) string {
	return "You uploaded these files before, as submission " + strconv.FormatInt(sub.ID, 10) + " (" + string(sub.Status) +
		"): that entry stands, and nothing was stored or re-run again. Change the recipe, code or logs to make a new entry."
}

// bundleBody returns the reader of the uploaded bundle, and what to call
// once it has been read.
func bundleBody(r *http.Request, scratchDir string) (io.Reader, func(), error) {
	noop := func() {}
	header := r.Header.Get("Content-Type")
	if header == "" {
		return nil, noop, d5list.Errorf(eUnsupportedMedia, "Content-Type is missing: send multipart/form-data with a %q field, or the bundle as application/gzip", "bundle")
	}
	mediaType, _, err := mime.ParseMediaType(header)
	if err != nil {
		return nil, noop, d5list.Errorf(d5list.EINVALID, "Content-Type %q: %v", header, err)
	}
	if rawBundleTypes[mediaType] {
		return r.Body, noop, nil
	}
	if mediaType != "multipart/form-data" {
		return nil, noop, d5list.Errorf(eUnsupportedMedia, "Content-Type %s is not accepted: send multipart/form-data with a %q field, or the bundle as application/gzip", mediaType, "bundle")
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, noop, d5list.Errorf(d5list.EINVALID, "multipart body: %v", err)
	}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return nil, noop, d5list.Errorf(d5list.EINVALID, "the multipart body has no field named %q (a bundle) or %q (a folder's files)", "bundle", folderField)
		}
		if err != nil {
			return nil, noop, bodyError("multipart body", err)
		}
		switch part.FormName() {
		case "bundle":
			return part, noop, nil
		case folderField:
			f, cleanup, err := folderBundle(part, mr, scratchDir)
			if err != nil {
				return nil, noop, err
			}
			return f, cleanup, nil
		}
	}
}

// bodyError reports a failure to read the request body: an over-long body
// stays itself (h.Error makes it a 413), anything else is the client's
// malformed body, named by what.
func bodyError(what string, err error) error {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return err
	}
	return d5list.Errorf(d5list.EINVALID, "%s: %v", what, err)
}
