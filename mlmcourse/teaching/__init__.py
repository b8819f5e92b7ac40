"""What the notebooks use: the experiment, figures, sliders, the sibling loader, offline BERT."""
