package docker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// The NFQUEUE netlink protocol (linux/netfilter/nfnetlink_queue.h): the
// kernel hands each packet that an iptables NFQUEUE rule sends to a queue
// to the process bound to that queue, and holds the packet until the
// process gives a verdict. Giving ACCEPT some milliseconds later is a delay
// line: what netem does, for kernels built without netem.
const (
	nfqnlMsgPacket       = 0
	nfqnlMsgVerdict      = 1
	nfqnlMsgConfig       = 2
	nfqnlMsgVerdictBatch = 3

	nfqaPacketHdr  = 1
	nfqaVerdictHdr = 2

	nfqaCfgCmd      = 1
	nfqaCfgParams   = 2
	nfqaCfgQueueMax = 3
	nfqaCfgMask     = 4
	nfqaCfgFlags    = 5

	nfqnlCfgCmdBind = 1
	nfqnlCopyMeta   = 1

	nfqaCfgFFailOpen = 1 << 0 // accept, undelayed, when the queue is full
	nfqaCfgFGSO      = 1 << 2 // hand over GSO packets whole: we never read them

	nfAccept = 1

	nlmsgHdrLen  = 16
	nfgenHdrLen  = 4
	nlattrHdrLen = 4
)

// nfQueueSocket is a netlink socket bound to some NFQUEUE queues of one
// network namespace. Reads and writes may run on different goroutines.
type nfQueueSocket struct {
	f   *os.File // non-blocking, so Close wakes a blocked Read
	seq uint32   // only the config calls, before any concurrent use
}

// openNFQueue opens a netfilter netlink socket inside the network
// namespace of the file netnsPath (e.g. /proc/<pid>/ns/net). The socket
// stays in that namespace for its life.
func openNFQueue(netnsPath string) (*nfQueueSocket, error) {
	type result struct {
		fd  int
		err error
	}
	ch := make(chan result, 1)
	// The goroutine enters the namespace on a locked thread and never
	// unlocks it: the runtime then ends that thread with the goroutine, so
	// no other goroutine ever runs in the container's namespace.
	go func() {
		runtime.LockOSThread()
		fd, err := socketInNetns(netnsPath)
		ch <- result{fd, err}
	}()
	r := <-ch
	if r.err != nil {
		return nil, r.err
	}
	if err := unix.SetNonblock(r.fd, true); err != nil {
		unix.Close(r.fd)
		return nil, fmt.Errorf("nfqueue: nonblock: %w", err)
	}
	return &nfQueueSocket{f: os.NewFile(uintptr(r.fd), "nfqueue:"+netnsPath)}, nil
}

func socketInNetns(path string) (int, error) {
	ns, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("nfqueue: open %s: %w", path, err)
	}
	defer unix.Close(ns)
	if err := unix.Setns(ns, unix.CLONE_NEWNET); err != nil {
		return -1, fmt.Errorf("nfqueue: enter %s: %w", path, err)
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
	if err != nil {
		return -1, fmt.Errorf("nfqueue: netlink socket: %w", err)
	}
	if err := setupNetlink(fd); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

func setupNetlink(fd int) error {
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("nfqueue: bind netlink: %w", err)
	}
	// A large buffer, and no ENOBUFS error when it overflows anyway: the
	// queues are fail-open, so a packet the kernel cannot hand over is
	// accepted at once, undelayed, rather than lost.
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 4<<20)
	_ = unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_NO_ENOBUFS, 1)
	return nil
}

// Bind attaches the socket to queue num, asks for packet metadata only,
// and lets the queue hold up to maxLen packets, beyond which the kernel
// accepts packets undelayed.
func (s *nfQueueSocket) Bind(num uint16, maxLen uint32) error {
	cmd := []byte{nfqnlCfgCmdBind, 0, 0, 0}
	params := make([]byte, 5)
	binary.BigEndian.PutUint32(params, 0)
	params[4] = nfqnlCopyMeta
	flags := be32(nfqaCfgFFailOpen | nfqaCfgFGSO)
	steps := [][]byte{
		attr(nfqaCfgCmd, cmd),
		append(append(attr(nfqaCfgParams, params), attr(nfqaCfgQueueMax, be32(maxLen))...),
			append(attr(nfqaCfgMask, flags), attr(nfqaCfgFlags, flags)...)...),
	}
	for _, attrs := range steps {
		s.seq++
		msg := nfMessage(nfqnlMsgConfig, num, unix.NLM_F_REQUEST|unix.NLM_F_ACK, s.seq, attrs)
		if err := s.request(msg); err != nil {
			return fmt.Errorf("nfqueue: bind queue %d: %w", num, err)
		}
	}
	return nil
}

// request sends msg and waits for its acknowledgement. It runs before the
// line reads packets, but a queue bound earlier may already hand some
// over: those are accepted at once, so none is left held.
func (s *nfQueueSocket) request(msg []byte) error {
	if _, err := s.f.Write(msg); err != nil {
		return err
	}
	buf := make([]byte, 8192)
	for range 16 {
		n, err := s.f.Read(buf)
		if err != nil {
			return err
		}
		msgs, err := syscallParseNetlink(buf[:n])
		if err != nil {
			return err
		}
		for _, m := range msgs {
			if p, ok := queuedPacket(m); ok {
				_ = s.AcceptUpTo(p.queue, p.id)
				continue
			}
			if m.Header.Type != unix.NLMSG_ERROR || len(m.Data) < 4 {
				continue
			}
			if code := int32(binary.NativeEndian.Uint32(m.Data)); code != 0 {
				return unix.Errno(-code)
			}
			return nil
		}
	}
	return errors.New("no acknowledgement")
}

// packet is one queued packet: its queue and its id in that queue.
type packet struct {
	queue uint16
	id    uint32
}

// ReadPackets reads one datagram of queued packets into out (reset first).
func (s *nfQueueSocket) ReadPackets(buf []byte, out []packet) ([]packet, error) {
	out = out[:0]
	n, err := s.f.Read(buf)
	if err != nil {
		return out, err
	}
	msgs, err := syscallParseNetlink(buf[:n])
	if err != nil {
		return out, err
	}
	for _, m := range msgs {
		if p, ok := queuedPacket(m); ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// queuedPacket reads a packet message: its queue and packet id.
func queuedPacket(m netlinkMessage) (packet, bool) {
	if m.Header.Type != unix.NFNL_SUBSYS_QUEUE<<8|nfqnlMsgPacket || len(m.Data) < nfgenHdrLen {
		return packet{}, false
	}
	id, ok := packetID(m.Data[nfgenHdrLen:])
	return packet{queue: binary.BigEndian.Uint16(m.Data[2:4]), id: id}, ok
}

// packetID finds NFQA_PACKET_HDR among a message's attributes.
func packetID(attrs []byte) (uint32, bool) {
	for len(attrs) >= nlattrHdrLen {
		l := int(binary.NativeEndian.Uint16(attrs))
		typ := binary.NativeEndian.Uint16(attrs[2:]) & 0x3fff // without the nested/byte-order bits
		if l < nlattrHdrLen || l > len(attrs) {
			return 0, false
		}
		if typ == nfqaPacketHdr && l >= nlattrHdrLen+4 {
			return binary.BigEndian.Uint32(attrs[nlattrHdrLen:]), true
		}
		attrs = attrs[min(align4(l), len(attrs)):]
	}
	return 0, false
}

// AcceptUpTo accepts every packet of queue num whose id is at most id.
func (s *nfQueueSocket) AcceptUpTo(num uint16, id uint32) error {
	v := make([]byte, 8)
	binary.BigEndian.PutUint32(v, nfAccept)
	binary.BigEndian.PutUint32(v[4:], id)
	_, err := s.f.Write(nfMessage(nfqnlMsgVerdictBatch, num, unix.NLM_F_REQUEST, 0, attr(nfqaVerdictHdr, v)))
	return err
}

// Close closes the socket: the kernel unbinds its queues.
func (s *nfQueueSocket) Close() error { return s.f.Close() }

func nfMessage(typ uint16, queue uint16, flags uint16, seq uint32, attrs []byte) []byte {
	b := make([]byte, nlmsgHdrLen+nfgenHdrLen, nlmsgHdrLen+nfgenHdrLen+len(attrs))
	b = append(b, attrs...)
	binary.NativeEndian.PutUint32(b[0:], uint32(len(b)))
	binary.NativeEndian.PutUint16(b[4:], unix.NFNL_SUBSYS_QUEUE<<8|typ)
	binary.NativeEndian.PutUint16(b[6:], flags)
	binary.NativeEndian.PutUint32(b[8:], seq)
	b[16] = unix.AF_UNSPEC
	b[17] = unix.NFNETLINK_V0
	binary.BigEndian.PutUint16(b[18:], queue)
	return b
}

func attr(typ uint16, payload []byte) []byte {
	l := nlattrHdrLen + len(payload)
	b := make([]byte, align4(l))
	binary.NativeEndian.PutUint16(b, uint16(l))
	binary.NativeEndian.PutUint16(b[2:], typ)
	copy(b[nlattrHdrLen:], payload)
	return b
}

func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

func align4(n int) int { return (n + 3) &^ 3 }

// syscallParseNetlink splits a datagram into netlink messages, refusing
// any whose length runs past the datagram.
func syscallParseNetlink(b []byte) ([]netlinkMessage, error) {
	var out []netlinkMessage
	for len(b) >= nlmsgHdrLen {
		l := int(binary.NativeEndian.Uint32(b))
		if l < nlmsgHdrLen || l > len(b) {
			return out, fmt.Errorf("nfqueue: netlink message of %d bytes in %d", l, len(b))
		}
		out = append(out, netlinkMessage{
			Header: netlinkHeader{Len: uint32(l), Type: binary.NativeEndian.Uint16(b[4:])},
			Data:   b[nlmsgHdrLen:l],
		})
		b = b[min(align4(l), len(b)):]
	}
	return out, nil
}

type netlinkHeader struct {
	Len  uint32
	Type uint16
}

type netlinkMessage struct {
	Header netlinkHeader
	Data   []byte
}
