; Written for this project (MIT, see ../NOTICE.md) for its tyreworld domain (domain.pddl).
; Change the flat tyre: the spare pumped up, on the hub, nuts tight.
(define (problem ima-change-tyre)
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
    (on spare1 hub1)
    (inflated spare1)
    (nuts-tight hub1)
  )))
