// Package static holds the portal's stylesheets, scripts and the vendored
// ECharts, embedded so that the binary serves them itself: the pages load
// nothing from other origins.
package static

import "embed"

// FS holds css/, js/, img/ and vendor/.
//
//go:embed css js img vendor
var FS embed.FS
