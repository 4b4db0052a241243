package pingpong

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Row is one line of the table: a size, its round trips, its one-way
// latency in microseconds and its bandwidth in MB/s.
type Row struct {
	Size      int
	Reps      int64
	LatencyUS float64
	MBps      float64
}

// Row is the line of the table for r.
func (r Result) Row() Row {
	return Row{Size: r.Size, Reps: r.Reps, LatencyUS: r.LatencyMicros(), MBps: r.MBps()}
}

// header names the columns of the table.
var header = []string{"bytes", "rounds", "latency_us", "MB/s"}

// WriteHeader writes the table's first line.
func WriteHeader(w io.Writer) error {
	_, err := fmt.Fprintf(w, "%12s %10s %14s %12s\n", header[0], header[1], header[2], header[3])
	return err
}

// WriteRow writes one line of the table.
func WriteRow(w io.Writer, r Row) error {
	_, err := fmt.Fprintf(w, "%12d %10d %14.2f %12.2f\n", r.Size, r.Reps, r.LatencyUS, r.MBps)
	return err
}

// ParseTable reads a table written by WriteHeader and WriteRow. Blank
// lines are skipped; any other line that is not a row is an error naming
// it, as is a table without rows.
func ParseTable(r io.Reader) ([]Row, error) {
	var rows []Row
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.Join(strings.Fields(line), " ") == strings.Join(header, " ") {
			continue
		}
		row, err := parseRow(line)
		if err != nil {
			return nil, fmt.Errorf("pingpong table, line %d %q: %w", n, line, err)
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("pingpong table: %w", err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("pingpong table: no rows (want lines of %s)", strings.Join(header, ", "))
	}
	return rows, nil
}

// parseRow reads "bytes rounds latency_us MB/s".
func parseRow(line string) (Row, error) {
	f := strings.Fields(line)
	if len(f) != len(header) {
		return Row{}, fmt.Errorf("want %d columns (%s), got %d", len(header), strings.Join(header, ", "), len(f))
	}
	size, err1 := strconv.Atoi(f[0])
	reps, err2 := strconv.ParseInt(f[1], 10, 64)
	lat, err3 := strconv.ParseFloat(f[2], 64)
	bw, err4 := strconv.ParseFloat(f[3], 64)
	switch {
	case err1 != nil || size < 1:
		return Row{}, fmt.Errorf("bytes %q is not a positive whole number", f[0])
	case err2 != nil || reps < 1:
		return Row{}, fmt.Errorf("rounds %q is not a positive whole number", f[1])
	case err3 != nil || !(lat > 0) || math.IsInf(lat, 0):
		return Row{}, fmt.Errorf("latency_us %q is not a positive number", f[2])
	case err4 != nil || !(bw >= 0) || math.IsInf(bw, 0):
		return Row{}, fmt.Errorf("MB/s %q is not a number", f[3])
	}
	return Row{Size: size, Reps: reps, LatencyUS: lat, MBps: bw}, nil
}
