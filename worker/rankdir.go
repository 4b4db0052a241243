package worker

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// Every copy of a rank works in a folder of its own inside the job folder
// (rank-3.0 for copy 0 of rank 3), holding its own copy of the inputs, so
// ranks placed on one host never overwrite each other's files, and each
// rank's outputs come back as that rank's. The program itself is run from
// the job folder.

// rankDir is the working folder of copy p.
func (r *running) rankDir(p proto.Proc) string {
	return filepath.Join(r.dir, fmt.Sprintf("rank-%d.%d", p.Rank, p.Replica))
}

// stageRank makes copy p's folder and copies the inputs into it from the
// blob store (where stage verified them).
func (r *running) stageRank(p proto.Proc) error {
	dir := r.rankDir(p)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("folder of rank %d.%d: %w", p.Rank, p.Replica, err)
	}
	for _, f := range r.c.Inputs {
		h, err := blob.ParseHash(f.Hash)
		if err != nil {
			return err
		}
		if err := r.svc.blobs.CopyTo(h, filepath.Join(dir, f.Name), 0o600); err != nil {
			return fmt.Errorf("input %s for rank %d.%d: %w", f.Name, p.Rank, p.Replica, err)
		}
	}
	return nil
}

// sendOutputs streams every copy's output files back in chunks, tagged by
// rank. A folder goes back as a tar of it (NAME.tar). A file that cannot be
// sent is said once, in the job's stderr.
func (r *running) sendOutputs(k *sink) {
	for _, p := range r.c.Procs {
		dir := r.rankDir(p)
		for _, pattern := range r.c.Outputs {
			matches, _ := filepath.Glob(filepath.Join(dir, pattern))
			for _, path := range matches {
				if err := r.sendOutput(k, p, path); err != nil {
					k.send(r.ctx, proto.Report{Kind: proto.RepOutput, Stream: "stderr", Rank: -1,
						Data: []byte(fmt.Sprintf("output %s of rank %d not sent: %v", filepath.Base(path), p.Rank, err))})
				}
			}
		}
	}
}

// sendOutput sends one output file, or a folder as a tar, for copy p.
//
// The agent may be root and the job's processes may have made anything of
// their folder: every file is opened through openInJob (no symbolic link
// followed, nothing outside the job folder), so a job cannot make the
// agent send it a file the job itself could not read.
func (r *running) sendOutput(k *sink, p proto.Proc, path string) error {
	f, err := openInJob(r.dir, path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	name := filepath.Base(path)
	switch {
	case st.Mode().IsRegular():
		return r.sendFile(k, p, name, f, st.Size())
	case st.IsDir():
		tmp, err := os.CreateTemp(r.svc.cfg.JobsDir, ".out-*.tar")
		if err != nil {
			return err
		}
		defer os.Remove(tmp.Name())
		defer tmp.Close()
		if err := tarFolder(tmp, r.dir, path, r.svc.cfg.MaxOutputFile); err != nil {
			return fmt.Errorf("tar of the folder: %w", err)
		}
		size, err := tmp.Seek(0, io.SeekCurrent)
		if err != nil {
			return err
		}
		if _, err := tmp.Seek(0, io.SeekStart); err != nil {
			return err
		}
		return r.sendFile(k, p, name+".tar", tmp, size)
	default:
		return errors.New("neither a regular file nor a folder")
	}
}

// sendFile sends size bytes of f as output file name of copy p.
func (r *running) sendFile(k *sink, p proto.Proc, name string, f io.Reader, size int64) error {
	if size > r.svc.cfg.MaxOutputFile {
		return fmt.Errorf("%d bytes exceeds the %d-byte limit", size, r.svc.cfg.MaxOutputFile)
	}
	buf := make([]byte, proto.FileChunkSize)
	for {
		n, err := io.ReadFull(f, buf)
		eof := err == io.EOF || err == io.ErrUnexpectedEOF
		if err != nil && !eof {
			return err
		}
		if !k.send(r.ctx, proto.Report{Kind: proto.RepFile, Rank: p.Rank, Replica: p.Replica, Name: name,
			Data: append([]byte(nil), buf[:n]...), EOF: eof}) {
			return errors.New("submitter lost")
		}
		if eof {
			return nil
		}
	}
}

// errTarTooLarge stops a tar that would exceed the output limit.
var errTarTooLarge = errors.New("the folder exceeds the output file limit")

// tarFolder writes a tar of folder root, inside job folder jobDir, to w:
// regular files, folders and symbolic links (as links, never followed), at
// most limit bytes of file contents. Files are opened with openInJob.
func tarFolder(w io.Writer, jobDir, root string, limit int64) error {
	tw := tar.NewWriter(w)
	var total int64
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(path); err != nil {
				return err
			}
		} else if !info.Mode().IsRegular() && !info.IsDir() {
			return nil // devices, sockets, pipes: not outputs
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		hdr.Name, hdr.Uname, hdr.Gname = filepath.ToSlash(rel), "", ""
		if info.IsDir() {
			hdr.Name += "/"
		}
		if total += hdr.Size; total > limit {
			return errTarTooLarge
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		f, err := openInJob(jobDir, path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.CopyN(tw, f, hdr.Size)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}
