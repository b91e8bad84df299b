"""What people look at: the HTML report (:mod:`~assay.view.report`) and the review UI
(:mod:`~assay.view.ui`). Each asks a method how to show its results through the registry's views.
"""
