# Origin: https://github.com/yctao7/Mobile-Phone-Opening-Prediction
#   file: new_model.py
#   commit: 2f548dc42db0113deff7697f49f58cdac84833ea
#   url: https://github.com/yctao7/Mobile-Phone-Opening-Prediction/blob/2f548dc42db0113deff7697f49f58cdac84833ea/new_model.py
# Licence: MIT (full text in ./LICENSE, copied from the repository, LICENSE at commit b76f3225068d8dd27953e6688bfab774dc573e46)
# Collected for nar's breadth validation set (third-party code).
# Changes from the original:
#   - none (verbatim copy below this header)
# --------------------------------------------------------------------------------------------------
import torch.nn as nn

class GruPredictor(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.hidden_size = hidden_size
        self.gru = nn.GRU(input_size, hidden_size, batch_first=True)
        self.fc = nn.Linear(hidden_size, 1)
        
        nn.init.orthogonal_(self.gru.weight_ih_l0)
        nn.init.orthogonal_(self.gru.weight_hh_l0)
        nn.init.zeros_(self.gru.bias_ih_l0)
        nn.init.zeros_(self.gru.bias_hh_l0)
        nn.init.kaiming_normal_(self.fc.weight)
        nn.init.zeros_(self.fc.bias)
        
    def forward(self, x):
        _, h_n = self.gru(x)
        return self.fc(h_n[0]).reshape(-1)
