package handlers

import (
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"os"
	"path"
	"path/filepath"
	"strings"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
)

// folderField is the multipart field of a submission sent as the files of
// its folder (the browser's folder picker) instead of a packed bundle.
const folderField = "files"

// folderBundle writes the files of a submission folder, sent as parts named
// "files" whose filenames are paths inside the folder, to a scratch folder
// and packs it exactly as `d5list pack` would, so that a folder upload and
// a bundle upload go through the same checks. The caller reads the bundle
// and then calls cleanup.
func folderBundle(first *multipart.Part, mr *multipart.Reader, scratchDir string) (bundleFile *os.File, cleanup func(), err error) {
	scratch, err := os.MkdirTemp(scratchDir, "d5list-folder-")
	if err != nil {
		return nil, nil, d5list.Errorf(d5list.EINTERNAL, "folder upload: %v", err)
	}
	removeScratch := func() { _ = os.RemoveAll(scratch) }
	defer func() {
		if err != nil {
			removeScratch()
		}
	}()
	folder := filepath.Join(scratch, "submission")
	if err := os.Mkdir(folder, 0o755); err != nil {
		return nil, nil, d5list.Errorf(d5list.EINTERNAL, "folder upload: %v", err)
	}
	// os.Root keeps every write inside the folder, whatever a name says.
	root, err := os.OpenRoot(folder)
	if err != nil {
		return nil, nil, d5list.Errorf(d5list.EINTERNAL, "folder upload: %v", err)
	}
	defer root.Close()
	maxFiles := bundle.DefaultLimits().MaxFiles
	files := 0
	for part := first; part != nil; {
		if part.FormName() == folderField {
			if files++; files > maxFiles {
				return nil, nil, d5list.Errorf(d5list.EINVALID, "the folder has more than %d files", maxFiles)
			}
			if err := saveFolderPart(root, part); err != nil {
				return nil, nil, err
			}
		}
		if part, err = mr.NextPart(); err == io.EOF {
			break
		} else if err != nil {
			return nil, nil, bodyError("multipart body", err)
		}
	}
	out, err := os.Create(filepath.Join(scratch, "bundle.tar.gz"))
	if err != nil {
		return nil, nil, d5list.Errorf(d5list.EINTERNAL, "folder upload: %v", err)
	}
	if err := bundle.Pack(folder, out); err != nil {
		out.Close()
		return nil, nil, err
	}
	if _, err := out.Seek(0, io.SeekStart); err != nil {
		out.Close()
		return nil, nil, d5list.Errorf(d5list.EINTERNAL, "folder upload: %v", err)
	}
	return out, func() { out.Close(); removeScratch() }, nil
}

// saveFolderPart stores one file of a folder upload under its relative
// path, refusing paths that leave the folder and names sent twice.
func saveFolderPart(root *os.Root, part *multipart.Part) error {
	name := folderPartName(part)
	clean := path.Clean(name)
	if name == "" || !filepath.IsLocal(filepath.FromSlash(clean)) || clean != name {
		return d5list.Errorf(d5list.EINVALID, "%q: a folder upload's file names must be plain paths inside the folder (no absolute paths, '..' or empty parts)", name)
	}
	if dir := path.Dir(clean); dir != "." {
		if err := root.MkdirAll(filepath.FromSlash(dir), 0o755); err != nil {
			return d5list.Errorf(d5list.EINVALID, "%s: %v", name, err)
		}
	}
	f, err := root.OpenFile(filepath.FromSlash(clean), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return d5list.Errorf(d5list.EINVALID, "%s: sent twice, or both a file and a folder", name)
	} else if err != nil {
		return d5list.Errorf(d5list.EINVALID, "%s: %v", name, err)
	}
	_, err = io.Copy(f, part)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return bodyError(name, err)
	}
	return nil
}

// folderPartName is the part's filename as sent. multipart.Part.FileName
// keeps only the last element, and a folder upload needs the whole path.
func folderPartName(part *multipart.Part) string {
	_, params, err := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
	if err != nil {
		return ""
	}
	return strings.ReplaceAll(params["filename"], "\\", "/")
}
