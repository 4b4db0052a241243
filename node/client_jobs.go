package node

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/job/submitter"
)

// maxUpdateLine bounds one line of a job's watch stream.
const maxUpdateLine = 1 << 20

// Upload stores a local file on the agent and returns its hash and size.
func (c *Client) Upload(ctx context.Context, path string) (BlobReply, error) {
	var out BlobReply
	f, err := os.Open(path)
	if err != nil {
		return out, err
	}
	defer f.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://agent/v1/blobs", f)
	if err != nil {
		return out, err
	}
	resp, err := c.send(req)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	return out, json.NewDecoder(io.LimitReader(resp.Body, maxAPIResponse)).Decode(&out)
}

// Submit starts a job whose files were uploaded.
func (c *Client) Submit(ctx context.Context, req SubmitRequest) (job.ID, error) {
	var out SubmitReply
	return out.ID, c.Do(ctx, http.MethodPost, "/v1/jobs", req, &out)
}

// SubmitFiles uploads a job's program and inputs (local files named by d)
// and submits it, each file named in the job folder by its base name.
func (c *Client) SubmitFiles(ctx context.Context, d job.Description, dryRun bool) (job.ID, error) {
	req := SubmitRequest{Description: d, DryRun: dryRun}
	var err error
	if req.Program, err = c.uploadRef(ctx, d.Executable); err != nil {
		return "", fmt.Errorf("upload program %s: %w", d.Executable, err)
	}
	for _, in := range d.Inputs {
		ref, err := c.uploadRef(ctx, in)
		if err != nil {
			return "", fmt.Errorf("upload input %s: %w", in, err)
		}
		req.Inputs = append(req.Inputs, ref)
	}
	id, err := c.Submit(ctx, req)
	if err != nil {
		return "", fmt.Errorf("submit: %w", err)
	}
	return id, nil
}

// uploadRef stores one file on the agent, named by its base name.
func (c *Client) uploadRef(ctx context.Context, path string) (proto.FileRef, error) {
	b, err := c.Upload(ctx, path)
	if err != nil {
		return proto.FileRef{}, err
	}
	return proto.FileRef{Name: filepath.Base(path), Hash: b.Hash, Size: b.Size}, nil
}

// Job returns a job's record.
func (c *Client) Job(ctx context.Context, id job.ID) (job.Record, error) {
	var out job.Record
	return out, c.Do(ctx, http.MethodGet, "/v1/jobs/"+url.PathEscape(string(id)), nil, &out)
}

// Jobs returns the records of the jobs submitted through the agent.
func (c *Client) Jobs(ctx context.Context) ([]job.Record, error) {
	var out []job.Record
	return out, c.Do(ctx, http.MethodGet, "/v1/jobs", nil, &out)
}

// Cancel ends a job everywhere.
func (c *Client) Cancel(ctx context.Context, id job.ID) error {
	return c.Do(ctx, http.MethodPost, "/v1/jobs/"+url.PathEscape(string(id))+"/cancel", nil, nil)
}

// Outputs lists the output files a job brought back.
func (c *Client) Outputs(ctx context.Context, id job.ID) ([]submitter.OutputFile, error) {
	var files []submitter.OutputFile
	return files, c.Do(ctx, http.MethodGet, "/v1/jobs/"+url.PathEscape(string(id))+"/outputs", nil, &files)
}

// Output copies one output file of a job to w; it returns the bytes copied.
func (c *Client) Output(ctx context.Context, id job.ID, name string, w io.Writer) (int64, error) {
	path := "http://agent/v1/jobs/" + url.PathEscape(string(id)) + "/outputs/" + url.PathEscape(name)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, path, nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.send(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, fmt.Errorf("output %s of job %s: %w", name, id, err)
	}
	return n, nil
}

// Watch calls fn with each update of a job until it ends or ctx ends. A
// broken stream is picked up again where it stopped.
func (c *Client) Watch(ctx context.Context, id job.ID, fn func(job.Update)) error {
	cursor := 0
	for {
		done, n, err := c.watchOnce(ctx, id, cursor, fn)
		cursor += n
		if done || ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil && n == 0 {
			return err
		}
	}
}

func (c *Client) watchOnce(ctx context.Context, id job.ID, cursor int, fn func(job.Update)) (done bool, n int, err error) {
	path := "http://agent/v1/jobs/" + url.PathEscape(string(id)) + "/watch?cursor=" + strconv.Itoa(cursor)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, path, nil)
	if err != nil {
		return false, 0, err
	}
	resp, err := c.send(req)
	if err != nil {
		return false, 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), maxUpdateLine)
	for sc.Scan() {
		var u job.Update
		if err := json.Unmarshal(sc.Bytes(), &u); err != nil {
			return false, n, fmt.Errorf("watch %s: %w", id, err)
		}
		n++
		fn(u)
		if u.Kind == "end" {
			return true, n, nil
		}
	}
	return false, n, sc.Err()
}

// send runs a raw request and turns an error answer into an *APIError.
func (c *Client) send(req *http.Request) (*http.Response, error) {
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, c.wrap(req, err)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		var e ErrorBody
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxAPIResponse))
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = http.StatusText(resp.StatusCode)
		}
		return nil, &APIError{Status: resp.StatusCode, Message: e.Error}
	}
	return resp, nil
}
