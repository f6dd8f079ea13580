package templates

import (
	"context"
	"fmt"
	"io"

	"github.com/a-h/templ"
)

// ChartOptions is what Chart needs of a go-echarts chart (*charts.Bar,
// *charts.Line, ...): Validate puts the axis data in place, JSON gives the
// ECharts option object.
type ChartOptions interface {
	Validate()
	JSON() map[string]any
}

// Chart renders a chart without inline JavaScript, so that the pages pass a
// script-src 'self' policy: an empty container naming a JSON data block,
// which /static/js/charts.js hands to echarts.init. label is the text
// alternative for readers that do not see the canvas.
func Chart(id, label string, chart ChartOptions) templ.Component {
	return templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
		chart.Validate()
		optionsID := id + "-options"
		_, err := fmt.Fprintf(w, `<div class="chart" id="%s" data-testid="chart" data-chart="%s" role="img" aria-label="%s"></div>`,
			templ.EscapeString(id), templ.EscapeString(optionsID), templ.EscapeString(label))
		if err != nil {
			return err
		}
		// JSONScript's encoder escapes <, > and &, so no value can close
		// the script element early.
		return templ.JSONScript(optionsID, chart.JSON()).Render(ctx, w)
	})
}
