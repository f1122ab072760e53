; Converted for this project from pddlgym's pddl/blocks_test/problem4.pddl (MIT, see ../NOTICE.md):
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
        (clear c) 
        (clear a) 
        (clear b) 
        (clear d) 
        (ontable c) 
        (ontable a)
        (ontable b) 
        (ontable e)
        (on d e)
        (handempty)

    )
    (:goal (and (on a b) (on b c) (on c d) (on d e)))
)
