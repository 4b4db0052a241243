package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/internal/wire"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/job/submitter"
)

// SubmitRequest is the body of POST /v1/jobs: a job whose program and input
// files were uploaded first with POST /v1/blobs.
type SubmitRequest struct {
	Description job.Description `json:"description"`
	Program     proto.FileRef   `json:"program"`
	Inputs      []proto.FileRef `json:"inputs,omitempty"`
	DryRun      bool            `json:"dry_run,omitempty"`
}

// SubmitReply answers POST /v1/jobs.
type SubmitReply struct {
	ID job.ID `json:"id"`
}

// BlobReply answers POST /v1/blobs.
type BlobReply struct {
	Hash string `json:"hash"`
	Size int64  `json:"size"`
}

// maxSubmitBody bounds a job description sent to the API.
const maxSubmitBody = 1 << 20

// jobsAPI serves the job routes of the control API over a submitter.
type jobsAPI struct {
	sub     *submitter.Submitter
	blobs   *blob.Store
	maxBlob int64
}

func (a *jobsAPI) register(handle func(string, http.Handler)) {
	handle("POST /v1/blobs", http.HandlerFunc(a.putBlob))
	handle("POST /v1/jobs", http.HandlerFunc(a.submit))
	handle("GET /v1/jobs", http.HandlerFunc(a.list))
	handle("GET /v1/jobs/{id}", http.HandlerFunc(a.get))
	handle("POST /v1/jobs/{id}/cancel", http.HandlerFunc(a.cancel))
	handle("GET /v1/jobs/{id}/watch", http.HandlerFunc(a.watch))
	handle("GET /v1/jobs/{id}/outputs", http.HandlerFunc(a.outputs))
	handle("GET /v1/jobs/{id}/outputs/{name}", http.HandlerFunc(a.output))
	a.registerStop(handle)
}

// outputs lists the output files a job brought back.
func (a *jobsAPI) outputs(w http.ResponseWriter, r *http.Request) {
	files, err := a.sub.Outputs(job.ID(r.PathValue("id")))
	if err != nil {
		WriteError(w, statusOf(err), err)
		return
	}
	WriteJSON(w, http.StatusOK, files)
}

// output sends one output file's bytes.
func (a *jobsAPI) output(w http.ResponseWriter, r *http.Request) {
	f, err := a.sub.OpenOutput(job.ID(r.PathValue("id")), r.PathValue("name"))
	if err != nil {
		WriteError(w, statusOf(err), err)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = io.Copy(w, f)
}

func (a *jobsAPI) putBlob(w http.ResponseWriter, r *http.Request) {
	h, n, err := a.blobs.Put(http.MaxBytesReader(w, r.Body, a.maxBlob), a.maxBlob)
	if err != nil {
		WriteError(w, http.StatusBadRequest, fmt.Errorf("upload: %w", err))
		return
	}
	WriteJSON(w, http.StatusOK, BlobReply{Hash: h.String(), Size: n})
}

func (a *jobsAPI) submit(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxSubmitBody))
	if err != nil {
		WriteError(w, http.StatusBadRequest, fmt.Errorf("job request: %w", err))
		return
	}
	var req SubmitRequest
	if err := wire.DecodeJSON(body, &req); err != nil {
		WriteError(w, http.StatusBadRequest, err)
		return
	}
	id, err := a.sub.Submit(submitter.Submission{Desc: req.Description, Program: req.Program, Inputs: req.Inputs, DryRun: req.DryRun})
	if err != nil {
		WriteError(w, http.StatusBadRequest, err)
		return
	}
	WriteJSON(w, http.StatusOK, SubmitReply{ID: id})
}

func (a *jobsAPI) list(w http.ResponseWriter, r *http.Request) {
	recs, err := a.sub.List()
	if err != nil {
		WriteError(w, http.StatusInternalServerError, err)
		return
	}
	WriteJSON(w, http.StatusOK, recs)
}

func (a *jobsAPI) get(w http.ResponseWriter, r *http.Request) {
	rec, err := a.sub.Get(job.ID(r.PathValue("id")))
	if err != nil {
		WriteError(w, statusOf(err), err)
		return
	}
	WriteJSON(w, http.StatusOK, rec)
}

func (a *jobsAPI) cancel(w http.ResponseWriter, r *http.Request) {
	if err := a.sub.Cancel(job.ID(r.PathValue("id")), "cancelled by the user"); err != nil {
		WriteError(w, statusOf(err), err)
		return
	}
	WriteJSON(w, http.StatusOK, struct{}{})
}

// watch streams a job's updates as JSON lines from ?cursor= until its end.
func (a *jobsAPI) watch(w http.ResponseWriter, r *http.Request) {
	cursor, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
	id := job.ID(r.PathValue("id"))
	enc := json.NewEncoder(w)
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "application/x-ndjson")
	err := a.sub.Watch(r.Context(), id, cursor, func(u job.Update) error {
		if err := enc.Encode(u); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	})
	if err != nil && errors.Is(err, job.ErrUnknownJob) {
		WriteError(w, http.StatusNotFound, err)
	}
}

func statusOf(err error) int {
	if errors.Is(err, job.ErrUnknownJob) || errors.Is(err, submitter.ErrNoOutput) {
		return http.StatusNotFound
	}
	return http.StatusBadRequest
}
