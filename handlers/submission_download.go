package handlers

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"strconv"

	d5list "github.com/deep500/d5list"
)

// Downloads is the service side of an entry's downloads: the bundle as
// uploaded and each claimed run's log.
type Downloads interface {
	SubmissionBundle(ctx context.Context, user *d5list.User, id int64) (string, *d5list.Submission, error)
	SubmissionRunLog(ctx context.Context, user *d5list.User, id int64, run int) ([]byte, error)
	SubmissionRerunLog(ctx context.Context, user *d5list.User, id int64, run int) ([]byte, error)
}

func (h *Handler) downloads() (Downloads, error) {
	d, ok := h.svc.(Downloads)
	if !ok {
		return nil, d5list.Errorf(d5list.EUNAVAILABLE, "downloads are not available on this server")
	}
	return d, nil
}

// DownloadBundle is GET /submissions/{id}/bundle: the archive as it was
// uploaded (tar.gz or zip, told by its first bytes).
func (h *Handler) DownloadBundle(w http.ResponseWriter, r *http.Request) {
	id, err := submissionID(r)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	d, err := h.downloads()
	if err != nil {
		h.Error(w, r, err)
		return
	}
	user, _ := h.viewer(r)
	path, sub, err := d.SubmissionBundle(r.Context(), user, id)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	f, err := os.Open(path)
	if err != nil {
		h.Error(w, r, d5list.Errorf(d5list.EINTERNAL, "opening the bundle of submission %d: %v", id, err))
		return
	}
	defer f.Close()
	var magic [4]byte
	n, _ := io.ReadFull(f, magic[:])
	name, kind := "submission-"+strconv.FormatInt(sub.ID, 10)+".tar.gz", "application/gzip"
	if bytes.HasPrefix(magic[:n], []byte("PK")) {
		name, kind = "submission-"+strconv.FormatInt(sub.ID, 10)+".zip", "application/zip"
	}
	w.Header().Set("Content-Type", kind)
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
	http.ServeContent(w, r, name, sub.CreatedAt, f)
}

// DownloadRunLog is GET /submissions/{id}/runs/{run}/log: one claimed
// run's MLLOG file, as plain text.
func (h *Handler) DownloadRunLog(w http.ResponseWriter, r *http.Request) {
	h.downloadLog(w, r, Downloads.SubmissionRunLog)
}

// DownloadRerunLog is GET /submissions/{id}/reruns/{run}/log: the MLLOG
// of one run of the portal's own re-run, as its runner reported it, with
// the claimed logs' access (Submission.MayDownload).
func (h *Handler) DownloadRerunLog(w http.ResponseWriter, r *http.Request) {
	h.downloadLog(w, r, Downloads.SubmissionRerunLog)
}

// downloadLog answers the log that read gives for the path's run.
func (h *Handler) downloadLog(w http.ResponseWriter, r *http.Request,
	read func(Downloads, context.Context, *d5list.User, int64, int) ([]byte, error)) {
	id, run, err := runPath(r)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	d, err := h.downloads()
	if err != nil {
		h.Error(w, r, err)
		return
	}
	user, _ := h.viewer(r)
	data, err := read(d, r.Context(), user, id, run)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write(data)
}

// runPath reads the submission id and run number of a log's path.
func runPath(r *http.Request) (int64, int, error) {
	id, err := submissionID(r)
	if err != nil {
		return 0, 0, err
	}
	run, err := strconv.Atoi(r.PathValue("run"))
	if err != nil || run < 0 {
		return 0, 0, d5list.Errorf(d5list.ENOTFOUND, "no run %q", r.PathValue("run"))
	}
	return id, run, nil
}
