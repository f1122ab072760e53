; Converted for this project from pddlgym's pddl/blocks_test/problem6.pddl (MIT, see ../NOTICE.md):
; the action-literal facts and the robot object removed, so that it runs on domain.pddl.
(define (problem blocks)
    (:domain blocks)
    (:objects 
        d - block
        b - block
        a - block
        c - block
        e - block
    )
    (:init
        (clear a)
        (on a b)
        (on b c)
        (ontable c)
        (ontable e)
        (clear e)
        (holding d)
        (handfull)

    )
    (:goal (and (on b a) (on c d)))
)
