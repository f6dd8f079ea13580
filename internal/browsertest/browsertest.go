// Package browsertest starts the headless Chromium the page tests drive,
// with the flags this machine's closed network needs and a profile that is
// cleaned up after the browser's last helper process has let go of it.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Chromium returns a Chromium or Chrome binary, or "".
func Chromium() string {
	for _, p := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// Start starts a headless Chromium with a fresh profile, or skips t where
// there is none, and returns a chromedp context that ends after timeout.
// The browser is closed and its profile removed when t ends.
func Start(t *testing.T, timeout time.Duration, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	bin := Chromium()
	if bin == "" {
		t.Skip("no Chromium found (/usr/bin/chromium, chromium-browser, google-chrome): the browser tests need one; .ci/run installs Debian's chromium")
	}
	// Not t.TempDir: Chromium's helper processes (crashpad, the network
	// service) outlive the browser by a moment and keep writing the
	// profile, so an immediate RemoveAll fails the test although every
	// step passed.
	profile, err := os.MkdirTemp("", "d5list-chromium-profile-")
	if err != nil {
		t.Fatal(err)
	}
	opts := append([]chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-default-browser-check", true), chromedp.UserDataDir(profile),
	}, extra...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, timeout)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
		removeProfile(t, profile)
	})
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	return ctx
}

// removeProfile retries for a few seconds while Chromium's last helpers
// exit; a profile that still cannot be removed is logged, not failed,
// because it is the browser's leftover and says nothing about the portal.
func removeProfile(t *testing.T, dir string) {
	var err error
	for range 50 {
		if err = os.RemoveAll(dir); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("chromium profile %s left behind: %v", dir, err)
}
