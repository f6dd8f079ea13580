package handlers

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"regexp"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/templates"
	"github.com/deep500/d5list/verifier"
)

// MLPerfChecker is the part of the service that checks MLPerf
// submissions; a service without it answers 503.
type MLPerfChecker interface {
	CheckMLPerf(ctx context.Context, body io.Reader, round, rules string) (any, error)
}

var roundParam = regexp.MustCompile(`^[0-9]+\.[0-9]+$`)

// CheckMLPerf is POST /api/v1/mlperf/check[?round=X.Y][&rules=today]: an
// MLPerf Training
// submission tree or one benchmark's result folder as a .tar.gz or .zip
// (the raw body, or the multipart field "bundle"), judged by the rules of
// the round's own release of mlcommons/logging (rules=today: today's
// rules, which MLCommons later tightened), answered with the
// report `d5list check --mlperf --json` prints. A submission MLPerf would
// refuse is still a 200: "accepted" says the verdict; 400 is for an
// upload that cannot be read, and for one whose round neither ?round=
// nor its folder's name nor its benchmarks tell (the reasons, code
// mlperf_round, list the rounds to choose from).
func (h *Handler) CheckMLPerf(w http.ResponseWriter, r *http.Request) {
	checker, ok := h.svc.(MLPerfChecker)
	if !ok {
		h.Error(w, r, d5list.Errorf(d5list.EUNAVAILABLE, "this server does not check MLPerf folders"))
		return
	}
	round := r.URL.Query().Get("round")
	if round != "" && !roundParam.MatchString(round) {
		h.Error(w, r, d5list.Errorf(d5list.EINVALID, "round %q: give an MLPerf Training round such as 4.1", round))
		return
	}
	rules := r.URL.Query().Get("rules")
	if rules != "" && rules != verifier.RulesRelease && rules != verifier.RulesToday {
		h.Error(w, r, d5list.Errorf(d5list.EINVALID, "rules %q: give %s (today's mlcommons/logging), or %s or nothing for the round's own release", rules, verifier.RulesToday, verifier.RulesRelease))
		return
	}
	if r.ContentLength > h.opts.MaxUploadBytes {
		h.Error(w, r, d5list.Errorf(d5list.ETOOLARGE, "the request body is %d bytes; the limit is %d", r.ContentLength, h.opts.MaxUploadBytes))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, h.opts.MaxUploadBytes)
	body, err := archiveBody(r)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	rep, err := checker.CheckMLPerf(r.Context(), body, round, rules)
	if err != nil {
		h.Error(w, r, howToGiveTheRound(err, "?round=X.Y"))
		return
	}
	h.writeJSON(w, r, http.StatusOK, rep)
}

// howToGiveTheRound completes the refusal of a submission whose round
// cannot be told (its reasons list the rounds) with how to give it.
func howToGiveTheRound(err error, how string) error {
	var de *d5list.Error
	if !verifier.RoundUnknown(err) || !errors.As(err, &de) {
		return err
	}
	return &d5list.Error{Code: de.Code, Message: de.Message + " with " + how, Reasons: de.Reasons}
}

// archiveBody is the uploaded archive: the raw body, or the multipart
// field "bundle".
func archiveBody(r *http.Request) (io.Reader, error) {
	mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return nil, d5list.Errorf(eUnsupportedMedia, "Content-Type is missing or wrong: send the archive as application/gzip or application/zip, or multipart/form-data with a %q field", "bundle")
	}
	if rawBundleTypes[mediaType] {
		return r.Body, nil
	}
	if mediaType != "multipart/form-data" {
		return nil, d5list.Errorf(eUnsupportedMedia, "Content-Type %s is not accepted: send the archive as application/gzip or application/zip, or multipart/form-data with a %q field", mediaType, "bundle")
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, d5list.Errorf(d5list.EINVALID, "multipart body: %v", err)
	}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return nil, d5list.Errorf(d5list.EINVALID, "the multipart body has no field named %q", "bundle")
		}
		if err != nil {
			return nil, bodyError("multipart body", err)
		}
		if part.FormName() == "bundle" {
			return part, nil
		}
	}
}

// MLPerfCheckPage is GET /mlperf: the same check in the browser;
// static/js/mlperf.js posts the archive to POST /api/v1/mlperf/check and
// shows the report.
func (h *Handler) MLPerfCheckPage(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusOK, templates.MLPerfCheckPage(verifier.MLPerfRoundNames(), h.opts.MaxUploadBytes))
}
