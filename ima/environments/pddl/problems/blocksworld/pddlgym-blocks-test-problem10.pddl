; Converted for this project from pddlgym's pddl/blocks_test/problem10.pddl (MIT, see ../NOTICE.md):
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
        (ontable a)
        (clear b)
        (ontable b)
        (clear c)
        (ontable c)
        (clear d)
        (ontable d)
        (clear e)
        (ontable e)
        (clear f)
        (ontable f)
        (handempty)

    )
    (:goal (and (on a b) (on b c) (on d e) (on e f)))
)
