# Origin: https://github.com/udacity/deep-learning-v2-pytorch
#   file: autoencoder/linear-autoencoder/Simple_Autoencoder_Solution.ipynb
#   commit: c9404fc86181fc3f0906b368697268257f348535
#   url: https://github.com/udacity/deep-learning-v2-pytorch/blob/c9404fc86181fc3f0906b368697268257f348535/autoencoder/linear-autoencoder/Simple_Autoencoder_Solution.ipynb
# Licence: MIT (full text in ./LICENSE, copied from the repository)
# Collected for nar's breadth validation set (third-party code).
# Changes from the original:
#   - extracted from the Jupyter notebook: code cell(s) 7 (model definition and its helpers); `import torch` added
#   - removed the `# initialize the NN` lines that instantiate and print the model; data loading, training and plotting cells left out
# --------------------------------------------------------------------------------------------------
import torch
import torch.nn as nn
import torch.nn.functional as F

# define the NN architecture
class Autoencoder(nn.Module):
    def __init__(self, encoding_dim):
        super(Autoencoder, self).__init__()
        ## encoder ##
        # linear layer (784 -> encoding_dim)
        self.fc1 = nn.Linear(28 * 28, encoding_dim)
        
        ## decoder ##
        # linear layer (encoding_dim -> input size)
        self.fc2 = nn.Linear(encoding_dim, 28*28)
        

    def forward(self, x):
        # add layer, with relu activation function
        x = F.relu(self.fc1(x))
        # output layer (sigmoid for scaling from 0 to 1)
        x = F.sigmoid(self.fc2(x))
        return x
