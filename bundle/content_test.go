package bundle

import (
	"slices"
	"testing"
)

// TestContentSumIgnoresTheArchive: the same files have one content sum as
// a tar.gz, a zip, a tar.gz wrapped in a folder and in another order, and
// as a folder; a changed byte or a renamed file changes it.
func TestContentSumIgnoresTheArchive(t *testing.T) {
	files := validEntries()
	open := func(name string, data []byte) string {
		t.Helper()
		b, err := Open(writeTemp(t, name, data), DefaultLimits())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(b.ContentSHA256) != 64 {
			t.Fatalf("%s: content sum %q", name, b.ContentSHA256)
		}
		return b.ContentSHA256
	}
	want := open("bundle.tar.gz", tarGz(t, files))
	var wrapped []ent
	for _, e := range slices.Backward(files) {
		e.name = "mysub/" + e.name
		e.mode = 0o600
		wrapped = append(wrapped, e)
	}
	dir := t.TempDir()
	writeFolder(t, dir, files)
	folder, err := ReadDir(dir, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]string{
		"zip":                           open("bundle.zip", zipBytes(t, files)),
		"wrapped, reversed, other mode": open("wrapped.tar.gz", tarGz(t, wrapped)),
		"folder":                        folder.ContentSHA256,
	} {
		if got != want {
			t.Errorf("%s: content sum %s, want the tar.gz's %s", name, got, want)
		}
	}
	changed := with(without(files, "README.md"), ent{name: "README.md", body: "# my submission!\n"})
	renamed := with(without(files, "README.md"), ent{name: "README.txt", body: "# my submission\n"})
	for name, ents := range map[string][]ent{"a changed byte": changed, "a renamed file": renamed} {
		if got := open("other.tar.gz", tarGz(t, ents)); got == want {
			t.Errorf("%s: content sum unchanged", name)
		}
	}
}
