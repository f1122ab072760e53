; Converted for this project from pddlgym's pddl/blocks_test/problem8.pddl (MIT, see ../NOTICE.md):
; the action-literal facts and the robot object removed, so that it runs on domain.pddl.
(define (problem blocks)
    (:domain blocks)
    (:objects 
        d - block
        b - block
        a - block
        c - block
        e - block
        f - block
    )
    (:init
        (clear a)
        (on a b)
        (on b c)
        (on c d)
        (on d e)
        (on e f)
        (ontable f)
        (handempty)

    )
    (:goal (and (on f e) (on e d) (on c b) (on b a)))
)
