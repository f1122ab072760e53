; Converted for this project from pddlgym's pddl/blocks_test/problem2.pddl (MIT, see ../NOTICE.md):
; the action-literal facts and the robot object removed, so that it runs on domain.pddl.
(define (problem blocks)
    (:domain blocks)
    (:objects 
        d - block
        b - block
        a - block
        c - block
    )
    (:init 
        (clear b)
        (clear d)
        (on c a)
        (on d c)
        (ontable a)
        (ontable b) 
        (handempty)

    )
    (:goal (and (on b a) (on a c) (on c d)))
)
