package leaderboard

import (
	"net/url"
	"strconv"
	"strings"

	d5list "github.com/deep500/d5list"
)

// Query parameters of a board page's pagination. Only the HTML page reads
// them: the JSON and CSV exports are always the whole board.
const (
	ParamPage = "page" // 1-based page number
	ParamPer  = "per"  // rows per page
)

// Bounds of a page: a board of 100,000 entries shown at once was a 170 MB
// page that took minutes, so the rows of one page are bounded whatever
// the link asks for.
const (
	DefaultPerPage = 100
	MinPerPage     = 10
	MaxPerPage     = 1000
)

// Page selects the rows of a board that one HTML page shows. The zero
// value is the first page at the default size.
type Page struct {
	Number int // 1-based; 0 means 1
	Per    int // 0 means DefaultPerPage
}

// ParsePage reads the page from a permalink's query. A value that is not
// a whole number in bounds is an error naming the parameter, rather than
// a silently different page; whether the page exists depends on the
// board, see Page.Check.
func ParsePage(q url.Values) (Page, error) {
	var p Page
	if v := strings.TrimSpace(q.Get(ParamPage)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return Page{}, d5list.Errorf(d5list.EINVALID, "query parameter %s=%q: use a page number from 1", ParamPage, q.Get(ParamPage))
		}
		p.Number = n
	}
	if v := strings.TrimSpace(q.Get(ParamPer)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < MinPerPage || n > MaxPerPage {
			return Page{}, d5list.Errorf(d5list.EINVALID, "query parameter %s=%q: use a number of rows from %d to %d", ParamPer, q.Get(ParamPer), MinPerPage, MaxPerPage)
		}
		p.Per = n
	}
	return p.normalized(), nil
}

func (p Page) normalized() Page {
	if p.Number < 1 {
		p.Number = 1
	}
	if p.Per < 1 {
		p.Per = DefaultPerPage
	}
	return p
}

// Pages is the number of pages of a board of total rows; an empty board
// has one (empty) page.
func (p Page) Pages(total int) int {
	p = p.normalized()
	if total <= 0 {
		return 1
	}
	return (total + p.Per - 1) / p.Per
}

// Check reports a page past the board's last as not found: the link may
// be a permalink kept from when the board was longer.
func (p Page) Check(total int) error {
	p = p.normalized()
	if last := p.Pages(total); p.Number > last {
		return d5list.Errorf(d5list.ENOTFOUND, "page %d of this board does not exist: it has %d rows, %d pages of %d", p.Number, total, last, p.Per)
	}
	return nil
}

// Bounds are the half-open indexes [lo, hi) of the page's rows in a board
// of total rows, clamped to it.
func (p Page) Bounds(total int) (lo, hi int) {
	p = p.normalized()
	lo = min((p.Number-1)*p.Per, max(total, 0))
	hi = min(lo+p.Per, max(total, 0))
	return lo, hi
}

// At is the same board and page size at page n.
func (p Page) At(n int) Page {
	p = p.normalized()
	p.Number = n
	return p
}

// Query is the page's part of a permalink: nothing for the defaults, so
// that ?page=1, ?per=100 and no query are one link and one cache entry.
func (p Page) Query() url.Values {
	p = p.normalized()
	q := url.Values{}
	if p.Number != 1 {
		q.Set(ParamPage, strconv.Itoa(p.Number))
	}
	if p.Per != DefaultPerPage {
		q.Set(ParamPer, strconv.Itoa(p.Per))
	}
	return q
}

// PageLink is path with opt's filters and the page, keys sorted: one page
// of one board has one link.
func (o Options) PageLink(path string, p Page) string {
	if q := o.pageQuery(p); q != "" {
		return path + "?" + q
	}
	return path
}

// PageVariant is the normalised query of a board page: the cache variant
// of the HTML page (see Options.Variant).
func (o Options) PageVariant(p Page) string { return o.normalized().pageQuery(p) }

func (o Options) pageQuery(p Page) string {
	q := o.Query()
	for k, v := range p.Query() {
		q[k] = v
	}
	return q.Encode()
}

// Offset and Limit are the page's rows as a range: skip Offset, take Limit.
func (p Page) Offset() int { p = p.normalized(); return (p.Number - 1) * p.Per }

// Limit is the page's size.
func (p Page) Limit() int { return p.normalized().Per }
