package job

import (
	"errors"

	"github.com/zorilla-p2p/zorilla/internal/gang"
)

// gangColumn picks the job's column of the hosts' time-slice rotation when
// every host of plan takes part in one; nil otherwise (the job is then
// co-scheduled wherever it shares a host). A column free on every host is
// taken when there is one; else the one free on most hosts, where the job
// shares its slices with the job that holds that column.
func gangColumn(plan Plan) *int {
	free := make([]uint64, 0, len(plan.Hosts))
	for _, hp := range plan.Hosts {
		if hp.Offer.GangFree == nil {
			return nil
		}
		free = append(free, *hp.Offer.GangFree)
	}
	if len(free) == 0 {
		return nil
	}
	col, err := gang.PickColumn(free)
	if errors.Is(err, gang.ErrNoCommonColumn) {
		log.Infow("no time-slice column free on every host: the job shares one", "column", col)
	}
	return &col
}
