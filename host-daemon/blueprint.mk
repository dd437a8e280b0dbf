# placeholder: owned by the blueprint piece
