; Written for this project (MIT, see ../NOTICE.md) for its tyreworld domain (domain.pddl).
; The hub is up and bare; mount the (already pumped up) spare and tighten it.
(define (problem ima-mount-spare)
  (:domain tyreworld)
  (:objects hub1 - hub flat1 spare1 - wheel)
  (:init
    (is-open boot)
    (have wrench)
    (in pump boot)
    (in spare1 boot)
    (intact spare1)
    (in flat1 boot)
    (flat flat1)
    (lifted hub1)
    (free hub1)
    (nuts-off hub1)
    (inflated spare1)
  )
  (:goal (and
    (on spare1 hub1)
    (nuts-tight hub1)
  )))
