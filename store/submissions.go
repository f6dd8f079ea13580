package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	d5list "github.com/deep500/d5list"
)

// CreateSubmission stores s as queued together with its verification job,
// in one transaction, so that no queued submission lacks a job. It sets
// s.ID, s.Status and the timestamps. Where s's owner uploaded the same
// files before (s.ContentSHA256) to an entry that did not fail, it stores
// nothing and answers *d5list.RepeatedUpload naming that entry: found in
// the transaction that would store s, so two uploads of the same files at
// once make one entry.
func (db *DB) CreateSubmission(ctx context.Context, s *d5list.Submission) error {
	if s.BenchmarkID == "" {
		return d5list.Errorf(d5list.EINVALID, "submission: empty benchmark")
	}
	if s.BundleSHA256 != "" && !ValidSHA(s.BundleSHA256) {
		return d5list.Errorf(d5list.EINVALID, "submission: bundle_sha256 %q is not a hex sha256", s.BundleSHA256)
	}
	recipe, err := encodeJSON(s.Recipe)
	if err != nil {
		return fmt.Errorf("store: encoding the recipe: %w", err)
	}
	claimed, err := encodeResult(s.Claimed)
	if err != nil {
		return fmt.Errorf("store: encoding the claimed result: %w", err)
	}
	measured, err := encodeResult(s.Measured)
	if err != nil {
		return fmt.Errorf("store: encoding the measured result: %w", err)
	}
	reasons, err := encodeReasons(s.Reasons)
	if err != nil {
		return err
	}
	var system any
	if s.System != nil {
		b, err := json.Marshal(s.System)
		if err != nil {
			return fmt.Errorf("store: encoding the system description: %w", err)
		}
		system = string(b)
	}
	now := db.now()
	maxAttempts := db.MaxAttempts
	if maxAttempts <= 0 {
		maxAttempts = DefaultMaxAttempts
	}
	// The submitter is stored as the portal compares it, so that the
	// organisation's page and the board's confirmed mark find the entry
	// whatever spacing submission.json used.
	s.Submitter = d5list.CleanOrganisation(s.Submitter)
	var id int64
	err = db.writeTx(ctx, func(tx *sql.Tx) error {
		if _, err := benchmarkTx(ctx, tx, s.BenchmarkID); err != nil {
			return err
		}
		if err := heldUploadTx(ctx, tx, s.OwnerID, s.BenchmarkID); err != nil {
			return err
		}
		if err := repeatedUploadTx(ctx, tx, s); err != nil {
			return err
		}
		var owner any
		if s.OwnerID != 0 {
			owner = s.OwnerID
			name, err := submitForOrganisationTx(ctx, tx, s.OwnerID, s.Submitter)
			if err != nil {
				return err
			}
			s.Submitter = name
		}
		err := tx.QueryRowContext(ctx, `INSERT INTO submissions (benchmark_id, owner_id, division, availability,
				submitter, system_name, framework, accelerator, accelerators, host_cpu, status, bundle_sha256,
				bundle_size, recipe, claimed, measured, reasons, flag, created_at, updated_at, code_url, cost_per_hour, system,
				submitter_key, paper_url, content_sha256)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			s.BenchmarkID, owner, s.Division, s.Availability, s.Submitter, s.SystemName, s.Framework,
			s.Accelerator, s.Accelerators, s.HostCPU, string(d5list.StatusQueued), s.BundleSHA256, s.BundleSize,
			recipe, claimed, measured, reasons, s.Flag, now.UnixNano(), now.UnixNano(), s.CodeURL, s.CostPerHour, system,
			organisationKey(s.Submitter), s.PaperURL, s.ContentSHA256).Scan(&id)
		if err != nil {
			return err
		}
		requires, err := jobRequires(s.Recipe)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO jobs (submission_id, benchmark_id, state, max_attempts, created_at, updated_at, requires)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, id, s.BenchmarkID, string(d5list.JobQueued), maxAttempts, now.UnixNano(), now.UnixNano(), requires)
		if err != nil {
			return err
		}
		return syncBoardRowTx(ctx, tx, id)
	})
	if err != nil {
		return wrap(err, "creating a submission for %q", s.BenchmarkID)
	}
	s.ID = id
	s.Status = d5list.StatusQueued
	s.CreatedAt, s.UpdatedAt = fromUnixNano(now.UnixNano()), fromUnixNano(now.UnixNano())
	if s.Reasons == nil {
		s.Reasons = []d5list.Reason{}
	}
	return nil
}

// repeatedUploadTx answers *d5list.RepeatedUpload where s's owner has an
// entry of the same files that did not fail (submissions_by_content).
func repeatedUploadTx(ctx context.Context, tx *sql.Tx, s *d5list.Submission) error {
	if s.OwnerID == 0 || s.ContentSHA256 == "" {
		return nil
	}
	var id int64
	err := tx.QueryRowContext(ctx, `SELECT id FROM submissions WHERE owner_id = ? AND content_sha256 = ? AND status != ?
		ORDER BY id LIMIT 1`, s.OwnerID, s.ContentSHA256, string(d5list.StatusFailed)).Scan(&id)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return err
	}
	return &d5list.RepeatedUpload{Existing: id}
}

// submitForOrganisationTx holds an upload to its account's organisation
// and returns the submitter to store: the account's spelling of it.
//
// A name may be used by the accounts an organiser confirmed for it, or,
// while no account is confirmed for it, by the accounts that named it (at
// sign-up or with their first upload): naming an organisation is a request
// to join it, not membership, so it cannot outrank an organiser's
// confirmation. An account without an organisation takes the name with
// this upload. In the upload's transaction, so that two first uploads
// cannot give one account two organisations.
func submitForOrganisationTx(ctx context.Context, tx *sql.Tx, ownerID int64, submitter string) (string, error) {
	var org string
	var confirmed bool
	err := tx.QueryRowContext(ctx, `SELECT organisation, organisation_confirmed FROM users WHERE id = ?`, ownerID).Scan(&org, &confirmed)
	if errors.Is(err, sql.ErrNoRows) {
		return "", d5list.Errorf(d5list.ENOTFOUND, "submission: owner %d not found", ownerID)
	} else if err != nil {
		return "", err
	}
	submitter = d5list.CleanOrganisation(submitter)
	if len(submitter) > d5list.MaxOrganisationLen {
		return "", submitterError("submitter_long", fmt.Sprintf("submitter: longer than %d bytes", d5list.MaxOrganisationLen))
	}
	if org != "" && organisationKey(org) != organisationKey(submitter) {
		return "", submitterError("submitter_not_your_organisation", fmt.Sprintf(
			"submitter %q is not your account's organisation %q: an account submits for one organisation; "+
				"name %q, or ask an organiser to move your account", submitter, org, org))
	}
	if org != "" && confirmed {
		return org, nil
	}
	taken, err := confirmedOrganisationTx(ctx, tx, ownerID, submitter)
	if err != nil {
		return "", err
	}
	switch {
	case taken != "" && org != "":
		return "", submitterError("submitter_unconfirmed", fmt.Sprintf(
			"your account is awaiting confirmation by an organiser as a member of %q: an organiser confirmed other accounts "+
				"for it, and until one confirms yours it cannot submit for %q", taken, taken))
	case taken != "" && taken != submitter:
		return "", submitterError("submitter_taken", fmt.Sprintf(
			"submitter %q reads as %q, an organisation whose accounts an organiser confirmed, and yours is not one of them; "+
				"name an organisation that does not look like it, or ask an organiser to add your account to %q", submitter, taken, taken))
	case taken != "":
		return "", submitterError("submitter_taken", fmt.Sprintf(
			"submitter %q is an organisation whose accounts an organiser confirmed, and yours is not one of them; "+
				"ask an organiser to add your account to it", submitter))
	case org != "":
		return org, nil
	}
	_, err = tx.ExecContext(ctx, `UPDATE users SET organisation = ?, organisation_key = ?, organisation_confirmed = 0 WHERE id = ?`,
		submitter, organisationKey(submitter), ownerID)
	return submitter, err
}

// submitterError is a refusal of submission.json's submitter field, named
// so that the portal can point at the bundle's own manifest file.
func submitterError(code, msg string) error {
	return &d5list.Error{Code: d5list.EINVALID, Message: "submission.json: " + msg,
		Reasons: []d5list.Reason{{Code: code, File: "submission.json", Message: msg}}}
}

// publishedColumn is whether the entry's verdict is public: an organiser
// published it, or it is a failed audit (of the entry's latest job) and
// the organisers show those (d5list.SettingShowFailedAudits). The setting
// is read first, so that while it is off no row looks further.
const publishedColumn = `(s.published OR (EXISTS (SELECT 1 FROM settings WHERE name = '` + d5list.SettingShowFailedAudits + `' AND value = 'on')
	AND EXISTS (SELECT 1 FROM audit_failures af WHERE af.submission_id = s.id
		AND af.job_id = (SELECT max(id) FROM jobs WHERE submission_id = s.id))))`

const submissionColumns = `s.id, s.benchmark_id, coalesce(s.owner_id, 0), coalesce(u.name, ''), s.division,
	s.availability, s.submitter, s.system_name, s.framework, s.accelerator, s.accelerators, s.host_cpu,
	s.status, s.bundle_sha256, s.bundle_size, s.recipe, s.claimed, s.measured, s.reasons, s.flag,
	s.created_at, s.updated_at, s.code_url, s.cost_per_hour,
	coalesce(u.organisation_confirmed AND u.organisation_key = s.submitter_key, 0), ` + publishedColumn + `,
	s.paper_url, s.content_sha256
	FROM submissions s LEFT JOIN users u ON u.id = s.owner_id`

type scanner interface{ Scan(dest ...any) error }

// scanSubmission reads a row of submissionColumns, its results decoded
// through results where it is not nil.
func scanSubmission(row scanner, results *decodedResults) (*d5list.Submission, error) {
	var s d5list.Submission
	var recipe, claimed, measured sql.NullString
	var reasons string
	var created, updated int64
	err := row.Scan(&s.ID, &s.BenchmarkID, &s.OwnerID, &s.Owner, &s.Division, &s.Availability, &s.Submitter,
		&s.SystemName, &s.Framework, &s.Accelerator, &s.Accelerators, &s.HostCPU, &s.Status, &s.BundleSHA256,
		&s.BundleSize, &recipe, &claimed, &measured, &reasons, &s.Flag, &created, &updated, &s.CodeURL, &s.CostPerHour,
		&s.SubmitterConfirmed, &s.Published, &s.PaperURL, &s.ContentSHA256)
	if err != nil {
		return nil, err
	}
	s.CreatedAt, s.UpdatedAt = fromUnixNano(created), fromUnixNano(updated)
	if recipe.Valid {
		s.Recipe = new(d5list.Recipe)
		if err := json.Unmarshal([]byte(recipe.String), s.Recipe); err != nil {
			return nil, fmt.Errorf("submission %d: decoding recipe: %w", s.ID, err)
		}
	}
	for _, c := range []struct {
		col sql.NullString
		dst **d5list.Result
		nm  string
	}{{claimed, &s.Claimed, "claimed"}, {measured, &s.Measured, "measured"}} {
		if c.col.Valid {
			r, err := results.decode(c.col.String)
			if err != nil {
				return nil, fmt.Errorf("submission %d: decoding %s: %w", s.ID, c.nm, err)
			}
			*c.dst = r
		}
	}
	if err := json.Unmarshal([]byte(reasons), &s.Reasons); err != nil {
		return nil, fmt.Errorf("submission %d: decoding reasons: %w", s.ID, err)
	}
	if s.Reasons == nil {
		s.Reasons = []d5list.Reason{}
	}
	return &s, nil
}

// Submission returns one submission with its system description, which
// listings leave out: only the entry's own page shows it.
func (db *DB) Submission(ctx context.Context, id int64) (*d5list.Submission, error) {
	var s *d5list.Submission
	err := db.readTx(ctx, func(tx *sql.Tx) (err error) {
		if s, err = submissionTx(ctx, preparedTx{db, tx}, id); err != nil {
			return err
		}
		var system sql.NullString
		if err := db.queryRowRead(ctx, tx, `SELECT system FROM submissions WHERE id = ?`, id).Scan(&system); err != nil {
			return fmt.Errorf("store: reading the system description of submission %d: %w", id, err)
		}
		if system.Valid {
			if err := json.Unmarshal([]byte(system.String), &s.System); err != nil {
				return fmt.Errorf("submission %d: decoding the system description: %w", id, err)
			}
		}
		return nil
	})
	return s, err
}

// submissionTx reads submission id in tx; a read pool's transaction
// (preparedTx) decodes its results through the store's kept ones. Listings
// decode theirs each time: a long one would only push the charted
// entries' results out, and pay for a copy of each of its own.
func submissionTx(ctx context.Context, tx rowQuerier, id int64) (*d5list.Submission, error) {
	var results *decodedResults
	if p, ok := tx.(preparedTx); ok {
		results = &p.db.results
	}
	s, err := scanSubmission(tx.QueryRowContext(ctx, `SELECT `+submissionColumns+` WHERE s.id = ?`, id), results)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, d5list.Errorf(d5list.ENOTFOUND, "submission %d not found", id)
	} else if err != nil {
		return nil, fmt.Errorf("store: reading submission %d: %w", id, err)
	}
	return s, nil
}

// Submissions lists the submissions matching f, newest first.
func (db *DB) Submissions(ctx context.Context, f SubmissionFilter) ([]d5list.Submission, error) {
	var where []string
	var args []any
	if f.BenchmarkID != "" {
		where = append(where, "s.benchmark_id = ?")
		args = append(args, f.BenchmarkID)
	}
	if f.OwnerID != 0 {
		where = append(where, "s.owner_id = ?")
		args = append(args, f.OwnerID)
	}
	if f.Submitter != "" {
		// Compared as every identity check compares (organisationKey).
		where = append(where, "s.submitter_key = ?")
		args = append(args, organisationKey(f.Submitter))
	}
	if f.SystemName != "" {
		where = append(where, "s.system_name = ? COLLATE NOCASE")
		args = append(args, f.SystemName)
	}
	if len(f.Statuses) > 0 {
		where = append(where, "s.status IN (?"+strings.Repeat(", ?", len(f.Statuses)-1)+")")
		for _, st := range f.Statuses {
			args = append(args, string(st))
		}
	}
	q := `SELECT ` + submissionColumns
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY s.id DESC"
	if f.Limit > 0 {
		q += " LIMIT ?"
		args = append(args, f.Limit)
	}
	subs, err := db.querySubmissions(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: listing submissions: %w", err)
	}
	return subs, nil
}

// RecentlyVerified lists up to limit verified, unflagged submissions, the
// most recently changed first (the Atom feed): read from an index, never
// the whole table.
func (db *DB) RecentlyVerified(ctx context.Context, limit int) ([]d5list.Submission, error) {
	subs, err := db.querySubmissions(ctx, `SELECT `+submissionColumns+` WHERE s.status = ? AND s.flag = ''
		ORDER BY s.updated_at DESC, s.id DESC LIMIT ?`, string(d5list.StatusVerified), limit)
	return subs, wrap(err, "listing recently verified submissions")
}

// querySubmissions runs a SELECT of submissionColumns and scans its rows.
func (db *DB) querySubmissions(ctx context.Context, q string, args ...any) ([]d5list.Submission, error) {
	subs := []d5list.Submission{}
	err := db.readTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			s, err := scanSubmission(rows, nil)
			if err != nil {
				return err
			}
			subs = append(subs, *s)
		}
		return rows.Err()
	})
	return subs, err
}

// SetSubmissionStatus sets a submission's status and replaces its reasons
// (nil clears them).
func (db *DB) SetSubmissionStatus(ctx context.Context, id int64, st d5list.Status, reasons []d5list.Reason) error {
	if st == "" {
		return d5list.Errorf(d5list.EINVALID, "submission %d: empty status", id)
	}
	enc, err := encodeReasons(reasons)
	if err != nil {
		return err
	}
	err = db.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE submissions SET status = ?, reasons = ?, updated_at = ? WHERE id = ?`,
			string(st), enc, db.now().UnixNano(), id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return d5list.Errorf(d5list.ENOTFOUND, "submission %d not found", id)
		}
		return syncBoardRowTx(ctx, tx, id)
	})
	return wrap(err, "setting the status of submission %d", id)
}

// failSubmissionTx marks a submission failed, keeping the reasons it had
// (the static checks' findings) and adding why the re-run ended.
func failSubmissionTx(ctx context.Context, tx *sql.Tx, id int64, r d5list.Reason, now int64) error {
	var enc string
	if err := tx.QueryRowContext(ctx, `SELECT reasons FROM submissions WHERE id = ?`, id).Scan(&enc); err != nil {
		return fmt.Errorf("reading submission %d: %w", id, err)
	}
	var reasons []d5list.Reason
	if err := json.Unmarshal([]byte(enc), &reasons); err != nil {
		return fmt.Errorf("submission %d: decoding reasons: %w", id, err)
	}
	out, err := encodeReasons(append(reasons, r))
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE submissions SET status = ?, reasons = ?, updated_at = ? WHERE id = ?`,
		string(d5list.StatusFailed), out, now, id); err != nil {
		return err
	}
	return syncBoardRowTx(ctx, tx, id)
}

// encodeJSON encodes v, or gives NULL for a nil pointer.
func encodeJSON[T any](v *T) (any, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

func encodeReasons(rs []d5list.Reason) (string, error) {
	if rs == nil {
		rs = []d5list.Reason{}
	}
	b, err := json.Marshal(rs)
	if err != nil {
		return "", fmt.Errorf("store: encoding reasons: %w", err)
	}
	return string(b), nil
}
