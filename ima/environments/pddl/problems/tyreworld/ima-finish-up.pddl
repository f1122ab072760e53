; Written for this project (MIT, see ../NOTICE.md) for its tyreworld domain (domain.pddl).
; The spare is on the lifted hub with loose nuts: lower the car, tighten, tidy up.
(define (problem ima-finish-up)
  (:domain tyreworld)
  (:objects hub1 - hub flat1 spare1 - wheel)
  (:init
    (is-closed boot)
    (have wrench)
    (in pump boot)
    (have flat1)
    (flat flat1)
    (intact spare1)
    (inflated spare1)
    (on spare1 hub1)
    (lifted hub1)
    (nuts-loose hub1)
  )
  (:goal (and
    (nuts-tight hub1)
    (in flat1 boot)
    (in wrench boot)
    (in jack boot)
    (is-closed boot)
  )))
