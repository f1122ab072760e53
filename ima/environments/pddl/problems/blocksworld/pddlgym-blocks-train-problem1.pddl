; Converted for this project from pddlgym's pddl/blocks/problem1.pddl (MIT, see ../NOTICE.md):
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
        (clear c) 
        (clear a) 
        (clear b) 
        (clear d) 
        (ontable c) 
        (ontable a)
        (ontable b) 
        (ontable d) 
        (handempty)

    )
    (:goal (and (on d c) (on c b) (on b a)))
)
