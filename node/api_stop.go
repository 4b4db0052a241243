package node

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/submitter"
)

// Stop with a checkpoint and resume: POST
// /v1/jobs/{id}/stop?checkpoint=1[&timeout=D] answers once the job is
// stopped (or with why not), POST /v1/jobs/{id}/resume[?elsewhere=1] once
// it is flooding again.

// MaxStopTimeout bounds the timeout a stop may ask for.
const MaxStopTimeout = time.Hour

func (a *jobsAPI) registerStop(handle func(string, http.Handler)) {
	handle("POST /v1/jobs/{id}/stop", http.HandlerFunc(a.stop))
	handle("POST /v1/jobs/{id}/resume", http.HandlerFunc(a.resume))
}

func (a *jobsAPI) stop(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("checkpoint") != "1" {
		WriteError(w, http.StatusBadRequest, errors.New("stop needs ?checkpoint=1 (to end a job without one, cancel it)"))
		return
	}
	timeout := submitter.DefaultStopTimeout
	if v := q.Get("timeout"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > MaxStopTimeout {
			WriteError(w, http.StatusBadRequest, fmt.Errorf("stop: timeout %q is not a duration between 0 and %v, like 2m", v, MaxStopTimeout))
			return
		}
		timeout = d
	}
	if err := a.sub.Stop(r.Context(), job.ID(r.PathValue("id")), timeout); err != nil {
		WriteError(w, stopStatus(err), err)
		return
	}
	WriteJSON(w, http.StatusOK, struct{}{})
}

func (a *jobsAPI) resume(w http.ResponseWriter, r *http.Request) {
	if err := a.sub.Resume(job.ID(r.PathValue("id")), r.URL.Query().Get("elsewhere") == "1"); err != nil {
		WriteError(w, stopStatus(err), err)
		return
	}
	WriteJSON(w, http.StatusOK, struct{}{})
}

func stopStatus(err error) int {
	if errors.Is(err, job.ErrNotStoppable) || errors.Is(err, job.ErrNotResumable) {
		return http.StatusConflict
	}
	return statusOf(err)
}

// Stop stops a running job with a checkpoint and returns once it is
// stopped; timeout bounds the wait for the program's next checkpoint
// (0: the agent's default).
func (c *Client) Stop(ctx context.Context, id job.ID, timeout time.Duration) error {
	path := "/v1/jobs/" + url.PathEscape(string(id)) + "/stop?checkpoint=1"
	if timeout > 0 {
		path += "&timeout=" + url.QueryEscape(timeout.String())
	}
	return c.Do(ctx, http.MethodPost, path, nil, nil)
}

// Resume starts a stopped job again from its checkpoint; elsewhere keeps
// it off the hosts of the run that was stopped.
func (c *Client) Resume(ctx context.Context, id job.ID, elsewhere bool) error {
	path := "/v1/jobs/" + url.PathEscape(string(id)) + "/resume"
	if elsewhere {
		path += "?elsewhere=1"
	}
	return c.Do(ctx, http.MethodPost, path, nil, nil)
}
