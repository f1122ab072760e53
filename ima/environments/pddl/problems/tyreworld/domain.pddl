; Tyreworld, written for this project (MIT, see ../NOTICE.md): change a flat tyre.
; After the textbook "flat tyre" puzzle (Russell), formulated from scratch: the car's tools
; and spare wheels are in the boot; a wheel comes off a hub only when the hub is jacked up
; and its nuts are off; nuts are loosened and tightened with the hub on the ground.
; Plain STRIPS with typing (no negative preconditions), so any classical planner reads it.

(define (domain tyreworld)
  (:requirements :strips :typing)
  (:types item container hub - object
          tool wheel - item)
  (:constants wrench jack pump - tool
              boot - container)

  (:predicates
    (is-open ?c - container)          ; the boot is open
    (is-closed ?c - container)        ; the boot is closed
    (in ?x - item ?c - container)  ; the item is in the boot
    (have ?x - item)               ; you hold the item (out of the boot, not on a hub)
    (on ?w - wheel ?h - hub)       ; the wheel is mounted on the hub
    (free ?h - hub)                ; no wheel on the hub
    (on-ground ?h - hub)           ; the hub is down, the car's weight on it
    (lifted ?h - hub)              ; the hub is jacked up (the jack is under it)
    (nuts-tight ?h - hub)          ; the hub's nuts are on and tight
    (nuts-loose ?h - hub)          ; the hub's nuts are on but loose
    (nuts-off ?h - hub)            ; the hub's nuts are off
    (intact ?w - wheel)            ; the wheel's tyre is not punctured
    (flat ?w - wheel)              ; the wheel's tyre has no air
    (inflated ?w - wheel))         ; the wheel's tyre is pumped up

  (:action open
    :parameters (?c - container)
    :precondition (is-closed ?c)
    :effect (and (is-open ?c) (not (is-closed ?c))))

  (:action close
    :parameters (?c - container)
    :precondition (is-open ?c)
    :effect (and (is-closed ?c) (not (is-open ?c))))

  (:action fetch
    :parameters (?x - item ?c - container)
    :precondition (and (in ?x ?c) (is-open ?c))
    :effect (and (have ?x) (not (in ?x ?c))))

  (:action put-away
    :parameters (?x - item ?c - container)
    :precondition (and (have ?x) (is-open ?c))
    :effect (and (in ?x ?c) (not (have ?x))))

  (:action loosen
    :parameters (?h - hub)
    :precondition (and (have wrench) (on-ground ?h) (nuts-tight ?h))
    :effect (and (nuts-loose ?h) (not (nuts-tight ?h))))

  (:action tighten
    :parameters (?h - hub)
    :precondition (and (have wrench) (on-ground ?h) (nuts-loose ?h))
    :effect (and (nuts-tight ?h) (not (nuts-loose ?h))))

  (:action jack-up
    :parameters (?h - hub)
    :precondition (and (have jack) (on-ground ?h))
    :effect (and (lifted ?h) (not (on-ground ?h)) (not (have jack))))

  (:action jack-down
    :parameters (?h - hub)
    :precondition (lifted ?h)
    :effect (and (on-ground ?h) (have jack) (not (lifted ?h))))

  (:action undo-nuts
    :parameters (?h - hub)
    :precondition (and (have wrench) (lifted ?h) (nuts-loose ?h))
    :effect (and (nuts-off ?h) (not (nuts-loose ?h))))

  (:action do-up-nuts
    :parameters (?w - wheel ?h - hub)
    :precondition (and (have wrench) (lifted ?h) (nuts-off ?h) (on ?w ?h))
    :effect (and (nuts-loose ?h) (not (nuts-off ?h))))

  (:action remove-wheel
    :parameters (?w - wheel ?h - hub)
    :precondition (and (lifted ?h) (nuts-off ?h) (on ?w ?h))
    :effect (and (have ?w) (free ?h) (not (on ?w ?h))))

  (:action put-on-wheel
    :parameters (?w - wheel ?h - hub)
    :precondition (and (lifted ?h) (nuts-off ?h) (free ?h) (have ?w))
    :effect (and (on ?w ?h) (not (free ?h)) (not (have ?w))))

  (:action inflate
    :parameters (?w - wheel)
    :precondition (and (have pump) (have ?w) (intact ?w) (flat ?w))
    :effect (and (inflated ?w) (not (flat ?w)))))
