package docker

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ErrImageInUse is wrapped by RemoveImages' error for a tag that a
// container still uses.
var ErrImageInUse = errors.New("docker: image in use")

// RemoveImages removes the agent image tags given, then the untagged agent
// images that earlier builds left behind (a build moves its tag to the new
// image and leaves the old one dangling; BuildImage labels them all
// LabelRole=image). It returns what it removed. A tag that does not exist
// is skipped. An image a container still uses is kept: for a tag that is
// an error saying so, an untagged one is skipped (it belongs to a testnet
// still up).
func RemoveImages(ctx context.Context, dockerBin string, tags ...string) ([]string, error) {
	d := dockerCLI{dockerBin}
	var removed []string
	for _, tag := range tags {
		if !imageExists(ctx, d, tag) {
			continue
		}
		if _, err := d.run(ctx, "image", "rm", tag); err != nil {
			if inUse(err) {
				return removed, fmt.Errorf("%w: %s is still used by containers (another testnet? zorilla testnet down --name NAME it first): %w", ErrImageInUse, tag, err)
			}
			return removed, fmt.Errorf("docker: remove image %s: %w", tag, err)
		}
		removed = append(removed, tag)
	}
	ids, err := d.lines(ctx, "image", "ls", "-q", "--no-trunc", "--filter", "dangling=true", "--filter", "label="+LabelRole+"=image")
	if err != nil {
		return removed, fmt.Errorf("docker: list untagged agent images: %w", err)
	}
	for _, id := range ids {
		if _, err := d.run(ctx, "image", "rm", id); err != nil {
			if inUse(err) {
				continue
			}
			return removed, fmt.Errorf("docker: remove untagged image %s: %w", id, err)
		}
		removed = append(removed, id)
	}
	return removed, nil
}

// inUse tells whether docker refused to remove an image because a
// container uses it ("conflict: unable to delete ... image is being used
// by running container", "... is using its referenced image").
func inUse(err error) bool {
	s := err.Error()
	return strings.Contains(s, "conflict") || strings.Contains(s, "being used") || strings.Contains(s, "is using")
}
