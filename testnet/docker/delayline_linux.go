package docker

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// Bounds of a delay line.
const (
	// queueMaxLen is how many packets the kernel holds per queue: at 20 ms
	// of delay, 4096 packets is 200k packets/s, far more than idle agents
	// and small jobs send. Beyond it packets pass undelayed (fail-open).
	queueMaxLen = 4096
	// pendingPerQueue bounds the packets a line tracks per queue; one more
	// is accepted at once (and counted), as the kernel does when full.
	pendingPerQueue = queueMaxLen
)

// delayLine delays the packets of some queues of one network namespace:
// a reader goroutine stamps each packet with its arrival time, and one
// goroutine per queue accepts it when its delay has passed. Packets of a
// queue all have the same delay, so each queue is a FIFO.
type delayLine struct {
	sock  *nfQueueSocket
	done  chan struct{}
	wg    sync.WaitGroup
	close sync.Once

	mu       sync.Mutex // guards the counters below
	passed   uint64     // packets accepted after their delay
	overflow uint64     // packets accepted at once because the line was full
	errs     uint64     // verdicts the kernel refused
}

type stamped struct {
	id uint32
	at time.Time
}

// startDelayLine binds the queues in the namespace of netnsPath and starts
// delaying their packets until Close.
func startDelayLine(netnsPath string, queues []QueueDelay) (*delayLine, error) {
	if len(queues) == 0 {
		return nil, errors.New("docker: delay line without queues")
	}
	sock, err := openNFQueue(netnsPath)
	if err != nil {
		return nil, err
	}
	l := &delayLine{sock: sock, done: make(chan struct{})}
	chans := make(map[uint16]chan stamped, len(queues))
	for _, q := range queues {
		if err := sock.Bind(q.Num, queueMaxLen); err != nil {
			sock.Close()
			return nil, fmt.Errorf("docker: delay line %s: %w", netnsPath, err)
		}
		ch := make(chan stamped, pendingPerQueue)
		chans[q.Num] = ch
		l.wg.Add(1)
		go l.release(q, ch)
	}
	l.wg.Add(1)
	go l.read(chans)
	return l, nil
}

// read hands each queued packet to its queue's releaser, with the time it
// arrived.
func (l *delayLine) read(chans map[uint16]chan stamped) {
	defer l.wg.Done()
	buf := make([]byte, 64<<10)
	var pkts []packet
	for {
		var err error
		pkts, err = l.sock.ReadPackets(buf, pkts)
		if err != nil {
			if !errors.Is(err, os.ErrClosed) {
				log.Warnw("delay line stopped", "err", err)
			}
			return
		}
		now := time.Now()
		for _, p := range pkts {
			l.enqueue(chans, p, now)
		}
	}
}

func (l *delayLine) enqueue(chans map[uint16]chan stamped, p packet, now time.Time) {
	ch, ok := chans[p.queue]
	if ok {
		select {
		case ch <- stamped{id: p.id, at: now}:
			return
		default:
		}
	}
	l.count(&l.overflow, l.sock.AcceptUpTo(p.queue, p.id))
}

// release accepts the packets of one queue when their delay has passed,
// every due packet at once with one batch verdict.
func (l *delayLine) release(q QueueDelay, ch chan stamped) {
	defer l.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var next *stamped // taken from ch but not yet due
	for {
		head, ok := l.take(ch, next)
		if !ok || !l.sleepUntil(timer, head.at.Add(q.Delay)) {
			return
		}
		last, n := head.id, uint64(1)
		next = nil
	drain:
		for {
			select {
			case p := <-ch:
				if time.Until(p.at.Add(q.Delay)) > 0 {
					next = &p
					break drain
				}
				last, n = p.id, n+1
			default:
				break drain
			}
		}
		l.accept(q.Num, last, n)
	}
}

// take returns next if set, else the next packet of ch; false on Close.
func (l *delayLine) take(ch chan stamped, next *stamped) (stamped, bool) {
	if next != nil {
		return *next, true
	}
	select {
	case p := <-ch:
		return p, true
	case <-l.done:
		return stamped{}, false
	}
}

// sleepUntil waits until t; false on Close.
func (l *delayLine) sleepUntil(timer *time.Timer, t time.Time) bool {
	wait := time.Until(t)
	if wait <= 0 {
		return true
	}
	timer.Reset(wait)
	select {
	case <-timer.C:
		return true
	case <-l.done:
		return false
	}
}

func (l *delayLine) accept(queue uint16, id uint32, n uint64) {
	err := l.sock.AcceptUpTo(queue, id)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.errs++
		return
	}
	l.passed += n
}

func (l *delayLine) count(c *uint64, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.errs++
		return
	}
	*c++
}

// Stats returns the packets delayed, passed at once, and verdicts refused.
func (l *delayLine) Stats() (passed, overflow, errs uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.passed, l.overflow, l.errs
}

// Close stops the line. Packets still held are dropped by the kernel when
// the socket closes; TCP resends them, and with --queue-bypass on the
// rules later packets pass undelayed.
func (l *delayLine) Close() error {
	var err error
	l.close.Do(func() {
		close(l.done)
		err = l.sock.Close()
		l.wg.Wait()
	})
	return err
}
