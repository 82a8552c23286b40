package catalog

import (
	"fmt"
	"strings"
)

// Volume limits and defaults; NewVolume and Apply enforce the same ones.
const (
	// DefaultBlockSize is the logical block size when a request names none.
	DefaultBlockSize = 512
	// MaxVolumeSize bounds a volume (1 EiB): far beyond any filesystem a
	// node has, small enough that byte offsets never overflow int64.
	MaxVolumeSize = int64(1) << 60
	// VolumeFileSuffix is appended to a volume's name to make its backing
	// file name.
	VolumeFileSuffix = ".img"
)

// NamePattern describes ValidName for error messages.
const NamePattern = "1 to 64 characters of A-Z a-z 0-9 . _ -, not starting with . or -"

// VolumeSpec is what a client asks for when it creates a volume.
type VolumeSpec struct {
	Name string
	// Size in bytes, a positive multiple of BlockSize; required.
	Size int64
	// BlockSize is 512 or 4096; 0 means DefaultBlockSize.
	BlockSize int
	// Node owns the volume; required (the API fills in the node the
	// client talked to).
	Node string
	// Replicas is the number of copies, 1 to MaxReplicas (0 = 1): the
	// owner's and one on each of ReplicaNodes.
	Replicas int
	// ReplicaNodes are the nodes of the copies other than the owner's,
	// distinct, chosen by the proposer (PlaceReplicas); Replicas-1 of them.
	ReplicaNodes []string
	// RequestID identifies the client's request; a retried create with
	// the same RequestID answers the volume the first attempt made.
	RequestID string
}

// NewVolume is the one place where a volume request becomes a Volume: it
// fills the defaults, checks every limit, and derives the backing file's
// path from the name (never from the client). uuid and nguid are fresh
// random identifiers (32 hex digits) chosen by the proposer. Apply checks
// the result again (and what needs the catalogue: the owner, uniqueness,
// the owner's filesystem size).
func NewVolume(spec VolumeSpec, uuid, nguid string) (Volume, error) {
	if spec.BlockSize == 0 {
		spec.BlockSize = DefaultBlockSize
	}
	if spec.Replicas == 0 {
		spec.Replicas = 1
	}
	v := Volume{
		Name: spec.Name, UUID: uuid, NGUID: nguid, Size: spec.Size, BlockSize: spec.BlockSize,
		Path: spec.Name + VolumeFileSuffix, Node: spec.Node, RequestID: spec.RequestID,
		Replicas: spec.Replicas, Epoch: 1,
	}
	if err := v.validate(); err != nil {
		return v, err
	}
	if spec.Replicas < 1 || spec.Replicas > MaxReplicas {
		return v, fmt.Errorf("%w: %d replicas: want 1 to %d", ErrInvalid, spec.Replicas, MaxReplicas)
	}
	if len(spec.ReplicaNodes) != spec.Replicas-1 {
		return v, fmt.Errorf("%w: %d replicas need %d nodes besides the owner, %d given", ErrInvalid, spec.Replicas, spec.Replicas-1, len(spec.ReplicaNodes))
	}
	if spec.Replicas == 1 {
		return v, nil // Apply records the one replica (Node's Path)
	}
	v.ReplicaSet = []Replica{{Node: v.Node, Path: v.Path, State: ReplicaInSync}}
	for _, n := range spec.ReplicaNodes {
		v.ReplicaSet = append(v.ReplicaSet, Replica{Node: n, Path: v.Path, State: ReplicaInSync})
	}
	return v, v.checkReplicas()
}

// validate checks a volume's own fields (no catalogue lookups).
func (v *Volume) validate() error {
	switch {
	case !ValidName(v.Name):
		return fmt.Errorf("%w: volume name %q: want %s", ErrInvalid, v.Name, NamePattern)
	case v.BlockSize != 512 && v.BlockSize != 4096:
		return fmt.Errorf("%w: block size %d: want 512 or 4096", ErrInvalid, v.BlockSize)
	case v.Size == 0:
		return fmt.Errorf("%w: volume %q: size is required", ErrInvalid, v.Name)
	case v.Size < 0 || v.Size%int64(v.BlockSize) != 0:
		return fmt.Errorf("%w: size %d: want a positive multiple of the block size %d", ErrInvalid, v.Size, v.BlockSize)
	case v.Size > MaxVolumeSize:
		return fmt.Errorf("%w: size %d: larger than the limit of %d bytes (1 EiB)", ErrInvalid, v.Size, MaxVolumeSize)
	case !validID16(v.UUID) || !validID16(v.NGUID):
		return fmt.Errorf("%w: uuid and nguid must be 32 hex digits", ErrInvalid)
	case !ValidVolumePath(v.Path):
		return fmt.Errorf("%w: volume %q: path %q: want a plain file name in the volume directory (%s)", ErrInvalid, v.Name, v.Path, NamePattern+", then "+VolumeFileSuffix)
	}
	return nil
}

// ValidVolumePath reports whether p is a canonical backing-file path: a
// single file name (no directory, no "." or "..", nothing to clean), so
// that two different strings never name the same file in the owner's
// volume directory. Symlinks inside that directory are the owner's
// concern (the reconciler refuses them).
func ValidVolumePath(p string) bool {
	base, ok := strings.CutSuffix(p, VolumeFileSuffix)
	return ok && ValidName(base) && len(base) <= MaxNameLength
}

// sameID compares two 32-hex-digit identifiers case-insensitively.
func sameID(a, b string) bool { return strings.EqualFold(a, b) }
