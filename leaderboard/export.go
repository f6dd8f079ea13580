package leaderboard

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	d5list "github.com/deep500/d5list"
)

// csvHeader is the CSV export's columns. Their names and order are part of
// the export's contract: columns are only ever added at the end.
var csvHeader = []string{
	"rank", "submission_id", "benchmark", "submitter", "system_name", "framework", "division", "availability",
	"accelerator", "accelerators", "status", "flag", "metric", "value", "min", "max", "runs", "created_at",
	"prev_rank", "new", "cost_per_hour", "submission_url", "code_url", "system_url", "basis", "claimed",
	"host_cpu", "submitter_confirmed", "value_text", "accepted", "claimed_runs", "fresh_runs",
}

// csvColumns is the header of a board's CSV: the fixed columns, then one
// per measurement its level shows (d5list.LevelColumns), named by metric.
func csvColumns(level int) []string {
	cols := slices.Clone(csvHeader)
	for _, c := range d5list.LevelColumns(level) {
		cols = append(cols, c.Metric)
	}
	return cols
}

// SubmissionPath is the stable link of a submission's page.
func SubmissionPath(id int64) string { return "/submissions/" + strconv.FormatInt(id, 10) }

// SubmitterPath is the page of an organisation.
func SubmitterPath(submitter string) string { return "/submitters/" + url.PathEscape(submitter) }

// SystemPath is the page of one organisation's system.
func SystemPath(submitter, system string) string {
	return SubmitterPath(submitter) + "/systems/" + url.PathEscape(system)
}

// WriteJSON writes board as JSON, one entry at a time (an export of
// 100,000 entries never sits in memory whole): the same bytes as
// json.Encoder's Encode of it (an empty list as []), each entry with its
// value_text beside its fields.
func WriteJSON(w io.Writer, board *d5list.Leaderboard) error {
	return WriteJSONFrom(w, &board.Benchmark, entriesOf(board))
}

// Entries calls fn for each entry of a board in order, stopping at the
// first error: a board in memory, or one streamed from the index.
type Entries func(fn func(*d5list.Entry) error) error

func entriesOf(board *d5list.Leaderboard) Entries {
	return func(fn func(*d5list.Entry) error) error {
		for i := range board.Entries {
			if err := fn(&board.Entries[i]); err != nil {
				return err
			}
		}
		return nil
	}
}

// exportedEntry is an entry as the JSON export writes it: every field of
// the entry, and its value as the board prints it (FormatValue), so that
// a reader who quotes the export quotes the board.
type exportedEntry struct {
	*d5list.Entry
	ValueText string `json:"value_text"`
}

func exported(bench *d5list.Benchmark, e *d5list.Entry) exportedEntry {
	return exportedEntry{Entry: e, ValueText: FormatValue(e.Value, bench.Ranking.Unit)}
}

// WriteJSONFrom is WriteJSON of the board of bench whose entries each
// gives, one at a time.
func WriteJSONFrom(w io.Writer, bench *d5list.Benchmark, each Entries) error {
	bw := bufio.NewWriter(w)
	head, err := json.Marshal(bench)
	if err != nil {
		return err
	}
	bw.WriteString(`{"benchmark":`)
	bw.Write(head)
	bw.WriteString(`,"entries":[`)
	first := true
	// Each entry is encoded into one reused buffer, as json.Marshal would
	// encode it but for the newline Encode ends it with, which is left out.
	var entry bytes.Buffer
	enc := json.NewEncoder(&entry)
	err = each(func(e *d5list.Entry) error {
		entry.Reset()
		if err := enc.Encode(exported(bench, e)); err != nil {
			return err
		}
		if !first {
			bw.WriteByte(',')
		}
		first = false
		_, err := bw.Write(bytes.TrimSuffix(entry.Bytes(), []byte{'\n'}))
		return err
	})
	if err != nil {
		return err
	}
	bw.WriteString("]}\n")
	return bw.Flush()
}

// WriteCSV writes board as CSV, one row per entry, with links made
// absolute against base (for example "https://list.example.org"; empty
// keeps them relative). Numbers are written exactly, so ReadCSV gives the
// same values back.
func WriteCSV(w io.Writer, board *d5list.Leaderboard, base string) error {
	return WriteCSVFrom(w, &board.Benchmark, entriesOf(board), base)
}

// WriteCSVFrom is WriteCSV of the board of bench whose entries each gives.
func WriteCSVFrom(w io.Writer, bench *d5list.Benchmark, each Entries, base string) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvColumns(bench.Level)); err != nil {
		return err
	}
	levelCols := d5list.LevelColumns(bench.Level)
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	// One record's cells, reused row after row: the writer keeps none.
	rec := make([]string, 0, len(csvHeader)+len(levelCols))
	err := each(func(e *d5list.Entry) error {
		rec = append(rec[:0],
			strconv.Itoa(e.Rank), strconv.FormatInt(e.SubmissionID, 10), bench.ID, csvText(e.Submitter), csvText(e.SystemName),
			csvText(e.Framework), csvText(e.Division), csvText(e.Availability), csvText(e.Accelerator), strconv.Itoa(e.Accelerators), string(e.Status), csvText(e.Flag),
			e.Metric, f(e.Value), f(e.Min), f(e.Max), strconv.Itoa(e.Runs), e.CreatedAt.UTC().Format(time.RFC3339Nano),
			strconv.Itoa(e.PrevRank), strconv.FormatBool(e.New), f(e.CostPerHour),
			base+SubmissionPath(e.SubmissionID), csvText(e.CodeURL), base+SystemPath(e.Submitter, e.SystemName),
			e.Basis, f(e.Claimed), csvText(e.HostCPU), strconv.FormatBool(e.SubmitterConfirmed),
			FormatValue(e.Value, bench.Ranking.Unit), strconv.FormatBool(e.Accepted),
			strconv.Itoa(e.ClaimedRuns), strconv.Itoa(e.FreshRuns),
		)
		for _, c := range levelCols {
			v, ok := e.Measures[c.Metric]
			if !ok {
				rec = append(rec, "")
				continue
			}
			rec = append(rec, f(v))
		}
		return cw.Write(rec)
	})
	if err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}

// csvText neutralises a cell a competitor wrote (a submitter or system
// name, a code URL) that a spreadsheet would run as a formula: one that
// starts with = + - @, a tab or a carriage return gets a leading
// apostrophe, which spreadsheets show as text (OWASP's advice for CSV
// injection). A cell that starts with an apostrophe gets one more, so
// that readCSVText can always take exactly one off.
func csvText(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r'", rune(s[0])) {
		return "'" + s
	}
	return s
}

// readCSVText undoes csvText.
func readCSVText(s string) string {
	if len(s) >= 2 && s[0] == '\'' && strings.ContainsRune("=+-@\t\r'", rune(s[1])) {
		return s[1:]
	}
	return s
}

// ReadCSV parses what WriteCSV wrote back into entries. An error names the
// line and the column.
func ReadCSV(r io.Reader) ([]d5list.Entry, error) {
	cr := csv.NewReader(r)
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("csv line 1: %w", err)
	}
	if len(head) < len(csvHeader) {
		return nil, fmt.Errorf("csv line 1: %d columns, want at least %d", len(head), len(csvHeader))
	}
	for i, h := range csvHeader {
		if head[i] != h {
			return nil, fmt.Errorf("csv line 1: column %d is %q, want %q", i+1, head[i], h)
		}
	}
	// The rest are the level's measurements, one column per metric.
	measures := head[len(csvHeader):]
	cr.FieldsPerRecord = len(head)
	entries := []d5list.Entry{}
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			return entries, nil
		}
		if err != nil {
			return nil, fmt.Errorf("csv line %d: %w", line, err)
		}
		var perr error
		col := func(i int) string { return readCSVText(rec[i]) }
		num := func(i int) float64 {
			v, err := strconv.ParseFloat(rec[i], 64)
			if err != nil && perr == nil {
				perr = fmt.Errorf("csv line %d, column %s: %q is not a number", line, csvHeader[i], rec[i])
			}
			return v
		}
		integer := func(i int) int64 {
			v, err := strconv.ParseInt(rec[i], 10, 64)
			if err != nil && perr == nil {
				perr = fmt.Errorf("csv line %d, column %s: %q is not an integer", line, csvHeader[i], rec[i])
			}
			return v
		}
		created, err := time.Parse(time.RFC3339Nano, rec[17])
		if err != nil {
			return nil, fmt.Errorf("csv line %d, column created_at: %q is not an RFC 3339 time", line, rec[17])
		}
		isNew, err := strconv.ParseBool(rec[19])
		if err != nil {
			return nil, fmt.Errorf("csv line %d, column new: %q is not true or false", line, rec[19])
		}
		e := d5list.Entry{
			Rank: int(integer(0)), SubmissionID: integer(1), Submitter: col(3), SystemName: col(4), Framework: col(5),
			Division: col(6), Availability: col(7), Accelerator: col(8), Accelerators: int(integer(9)),
			Status: d5list.Status(col(10)), Flag: col(11), Metric: col(12), Value: num(13), Min: num(14), Max: num(15),
			Runs: int(integer(16)), CreatedAt: created, PrevRank: int(integer(18)), New: isNew, CostPerHour: num(20),
			CodeURL: col(22), Basis: col(24), Claimed: num(25), HostCPU: col(26),
		}
		confirmed, err := strconv.ParseBool(rec[27])
		if err != nil {
			return nil, fmt.Errorf("csv line %d, column submitter_confirmed: %q is not true or false", line, rec[27])
		}
		e.SubmitterConfirmed = confirmed
		if e.Accepted, err = strconv.ParseBool(rec[29]); err != nil {
			return nil, fmt.Errorf("csv line %d, column accepted: %q is not true or false", line, rec[29])
		}
		e.ClaimedRuns, e.FreshRuns = int(integer(30)), int(integer(31))
		for i, m := range measures {
			cell := rec[len(csvHeader)+i]
			if cell == "" {
				continue
			}
			v, err := strconv.ParseFloat(cell, 64)
			if err != nil {
				return nil, fmt.Errorf("csv line %d, column %s: %q is not a number", line, m, cell)
			}
			if e.Measures == nil {
				e.Measures = map[string]float64{}
			}
			e.Measures[m] = v
		}
		if perr != nil {
			return nil, perr
		}
		entries = append(entries, e)
	}
}
