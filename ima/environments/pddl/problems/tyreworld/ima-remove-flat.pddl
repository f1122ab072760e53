; Written for this project (MIT, see ../NOTICE.md) for its tyreworld domain (domain.pddl).
; Take the flat wheel off its hub.
(define (problem ima-remove-flat)
  (:domain tyreworld)
  (:objects hub1 - hub flat1 spare1 - wheel)
  (:init
    (is-closed boot)
    (in wrench boot)
    (in jack boot)
    (in pump boot)
    (in spare1 boot)
    (intact spare1)
    (flat spare1)
    (flat flat1)
    (on flat1 hub1)
    (on-ground hub1)
    (nuts-tight hub1)
  )
  (:goal (and
    (free hub1)
    (have flat1)
  )))
