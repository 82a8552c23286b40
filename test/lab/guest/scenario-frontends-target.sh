#!/bin/bash
# frontends scenario, target VM: the twovm target unchanged — one rdmablkd (ibverbs on rxe0) serving
# one volume (1 GiB brd RAM disk, nqn.2026-11.io.rdmablk:lab on lab.ip:4420) for the whole run,
# until the initiator VM (scenario-frontends-init.sh) writes initiator.done (at most lab.wait s).
exec bash /mnt/share/scripts/scenario-twovm-target.sh
